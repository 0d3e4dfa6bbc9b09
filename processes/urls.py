"""URLs of the processes app: the providers' webhooks."""
from django.urls import path

from processes.api import PaymentWebhook, WhatsAppWebhook

app_name = "processes"
urlpatterns = [
    path("api/webhooks/whatsapp/", WhatsAppWebhook.as_view(), name="whatsapp-webhook"),
    path("api/webhooks/payments/", PaymentWebhook.as_view(), name="payments-webhook"),
]
