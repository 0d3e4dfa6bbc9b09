"""URLs of the processes app: the providers' webhooks, invoice operations and the reviewers'
document files."""

from django.urls import path

from processes.api import PaymentWebhook, WhatsAppWebhook
from processes.billing.api import InvoiceDueDateView, InvoiceVoidView
from processes.onboarding.views import DocumentFileView

app_name = "processes"
urlpatterns = [
    path("api/webhooks/whatsapp/", WhatsAppWebhook.as_view(), name="whatsapp-webhook"),
    path("api/webhooks/payments/", PaymentWebhook.as_view(), name="payments-webhook"),
    path("api/invoices/<str:number>/void/", InvoiceVoidView.as_view(), name="invoice-void"),
    path(
        "api/invoices/<str:number>/due-date/", InvoiceDueDateView.as_view(), name="invoice-due-date"
    ),
    path(
        "onboarding/cases/<int:case_pk>/documents/<int:pk>/preview/",
        DocumentFileView.as_view(disposition="preview"),
        name="onboarding-document-preview",
    ),
    path(
        "onboarding/cases/<int:case_pk>/documents/<int:pk>/download/",
        DocumentFileView.as_view(disposition="download"),
        name="onboarding-document-download",
    ),
]
