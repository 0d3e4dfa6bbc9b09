"""Admin pages for operators: companies, documents, accounts, invoices, tickets,
reconciliation, every WhatsApp message (unmatched ones one filter away), status callbacks
for messages not known yet, what Meta says of our templates and account, the raw webhook
deliveries and their quarantined parts.

What customers and providers wrote (names, file names, ids) is shown as data, never translated."""

import logging

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.db.models.functions import Length
from django.http import Http404
from django.urls import path, reverse
from django.utils.dateparse import parse_datetime
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from durable import clock
from durable.surfaces.admin import data, json_block, label, run_link
from durable.templatetags.durable_admin import stamp
from processes.billing import admin_actions as billing_admin
from processes.billing.models import FinanceTicket, Invoice, PaymentEvent
from processes.billing.services import invoice_issue
from processes.onboarding.findings import kind_name
from processes.onboarding.models import Account, Company, Document
from processes.onboarding.recheck import company_cases_recheck
from processes.onboarding.views import document_file_response
from processes.reconciliation.models import BankStatementLine, LedgerEntry, ReconciliationBatch
from processes.webhooks.models import QuarantinedItem, WebhookDelivery
from processes.webhooks.services import delivery_signature_valid, quarantine_resolve
from processes.whatsapp.models import (
    AccountEvent,
    InboundMessage,
    InboundStatus,
    OutboundMessage,
    OutboundStatus,
    PendingStatus,
    TemplateQuality,
    TemplateStatus,
    WhatsAppTemplate,
)
from processes.whatsapp.selectors import KIND_LABELS
from processes.whatsapp.services import STALE_AFTER, inbound_process

log = logging.getLogger(__name__)


def document_file_link(document) -> str:
    """A link to the permission-checked admin view of the stored file, never to /media/."""
    if not document.pk or not document.file:
        return "—"
    url = reverse("admin:processes_document_file", args=[document.pk])
    if document.file_name:
        return format_html('<a href="{}" translate="no">{}</a>', url, document.file_name)
    return format_html('<a href="{}">{}</a>', url, _("download"))


class ProcessWrittenAdmin(admin.ModelAdmin):
    """Rows that only the processes write: an empty row added by hand (or a deleted one) would
    be a record of something that never happened, so the admin shows and annotates them only."""

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def under_review(company) -> bool:
    """Whether a compliance case was ever opened for the company: its documents are then
    evidence, and stay as they were (a correction is a new document row)."""
    from approvals.models import ApprovalRequest

    return (
        company is not None
        and ApprovalRequest.objects.filter(
            subject_type="company", subject_id=company.customer_id
        ).exists()
    )


class DocumentInline(admin.TabularInline):
    model = Document
    extra = 0
    fields = ["kind", "file_name", "mime_type", "size", "fetch_status", "stored_file", "created_at"]
    # What was received (name, type, size) is a fact, never edited; only the kind a person
    # corrects, and not once a case opened (the document is evidence then).
    readonly_fields = [
        "file_name",
        "mime_type",
        "size",
        "fetch_status",
        "stored_file",
        "created_at",
    ]

    def get_readonly_fields(self, request, obj=None):
        return self.fields if under_review(obj) else self.readonly_fields

    def has_add_permission(self, request, obj=None):
        return not under_review(obj) and super().has_add_permission(request, obj)

    def has_delete_permission(self, request, obj=None):
        return not under_review(obj) and super().has_delete_permission(request, obj)

    @admin.display(description=gettext_lazy("file"))
    def stored_file(self, document):
        return document_file_link(document)


@admin.register(Company)
class CompanyAdmin(admin.ModelAdmin):
    list_display = [
        "customer_id",
        "name_cell",
        "cnpj",
        "wa_id",
        "user_id",
        "status",
        "escalations",
        "updated_at",
    ]
    list_filter = ["status"]
    search_fields = [
        "customer_id",
        "name",
        "cnpj",
        "wa_id",
        "user_id",
        "former_wa_id",
        "former_user_id",
    ]
    readonly_fields = [
        "customer_id",
        "application",
        "run_link",
        "former_wa_id",
        "former_user_id",
        "created_at",
        "updated_at",
    ]
    inlines = [DocumentInline]

    @admin.display(description=gettext_lazy("name"), ordering="name")
    def name_cell(self, company):
        return data(company.name)

    @admin.display(description=gettext_lazy("onboarding run"))
    def run_link(self, company):
        return run_link(company.run_id)

    def save_model(self, request, obj, form, change):
        """A CNPJ changed here re-checks the case the company's run waits on (if any)."""
        super().save_model(request, obj, form, change)
        if change and "cnpj" in form.changed_data:
            company_cases_recheck(
                obj, actor=request.user.get_username(), reason="the CNPJ was changed in the admin"
            )


def change_said(change: dict) -> str:
    """One change a customer made to a document on WhatsApp, in the reader's language."""
    kinds = {"was": kind_name(change.get("from", "")), "kind": kind_name(change.get("to", ""))}
    if change.get("change") == "deleted":
        return _("deleted by the customer")
    if change.get("change") == "caption":
        return _("caption edited by the customer: %(was)s → %(kind)s") % kinds
    if change.get("change") == "chosen":
        return _("chosen by the customer from the list: %(was)s → %(kind)s") % kinds
    return str(change.get("change", "?"))


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    """The stored file is served by ``file_view`` (needs the view permission on documents) and
    is never uploaded here: only the WhatsApp download stores files, under names we choose."""

    list_display = [
        "company",
        "kind",
        "file_name",
        "mime_type",
        "size",
        "fetch_status",
        "created_at",
    ]
    list_filter = ["kind", "fetch_status", "mime_type"]
    search_fields = ["company__customer_id", "company__name", "file_name", "media_id", "message_id"]
    # What WhatsApp delivered (whose, which media, its type, size, hash, name, message) is a
    # fact: never edited here, so neither evidence nor segregation of duties can be rewritten
    # by staff. The kind and the caption a person may correct until a case opens.
    exclude = [
        "file",
        "changes",
    ]  # shown as changes_cell: what the customer did, in the reader's language
    readonly_fields = [
        "company",
        "media_id",
        "mime_type",
        "sha256",
        "file_name",
        "size",
        "message_id",
        "stored_file",
        "fetch_status",
        "fetch_note",
        "withdrawn_at",
        "changes_cell",
    ]

    def get_readonly_fields(self, request, obj=None):
        """Evidence once a case opened: every field read-only (add a new document instead).
        A document added here is written once, whole; what it received is fixed from then on."""
        if obj is None:  # what the customer later did to it comes from WhatsApp only
            return ["stored_file", "fetch_status", "fetch_note", "withdrawn_at", "changes_cell"]
        if under_review(obj.company):
            return [
                *(f.name for f in Document._meta.fields if f.name not in self.exclude),
                "stored_file",
                "changes_cell",
            ]
        return self.readonly_fields

    @admin.display(description=gettext_lazy("changes on WhatsApp"))
    def changes_cell(self, document):
        """Each change the customer made to the document on WhatsApp, oldest first: the stored
        ``changes`` read out, never shown as JSON."""
        if not document.changes:
            return "-"
        return format_html_join(
            "",
            '<div>{} <span class="quiet">({}, <span translate="no">{}</span>)</span></div>',
            (
                (
                    change_said(change),
                    stamp(parse_datetime(change.get("at") or "")) or "?",
                    change.get("message_id", ""),
                )
                for change in document.changes
            ),
        )

    def has_delete_permission(self, request, obj=None):
        return not (
            obj is not None and under_review(obj.company)
        ) and super().has_delete_permission(request, obj)

    @admin.display(description=gettext_lazy("file"))
    def stored_file(self, document):
        return document_file_link(document)

    def get_urls(self):
        view = self.admin_site.admin_view(self.file_view)
        return [path("<int:pk>/file/", view, name="processes_document_file"), *super().get_urls()]

    def file_view(self, request, pk: int):
        document = Document.objects.filter(pk=pk).first()
        if document is None:
            raise Http404(_("No such document."))
        if not self.has_view_permission(request, document):
            raise PermissionDenied
        log.info(
            "operator %s downloaded document %s from the admin", request.user.get_username(), pk
        )
        return document_file_response(document)


@admin.register(Account)
class AccountAdmin(ProcessWrittenAdmin):
    list_display = ["number", "company", "approved_by", "created_at"]
    search_fields = ["number", "company__name", "company__customer_id"]
    readonly_fields = ["company", "number", "idempotency_key", "approved_by", "created_at"]


@admin.register(Invoice)
class InvoiceAdmin(admin.ModelAdmin):
    """An invoice is issued with its reminders' run, and its status and due date change only
    through that run (the void and due-date actions): an edited row would leave the run
    reminding about an invoice that no longer asks for it."""

    list_display = ["number", "customer", "amount", "currency", "due_at", "status", "paid_at"]
    list_filter = ["status"]
    search_fields = ["number", "customer_name", "wa_id"]
    raw_id_fields = ["company"]
    actions = [billing_admin.void_invoices, billing_admin.change_due_date]

    def get_fields(self, request, obj=None):
        if obj is None:  # what invoice_issue takes
            return ["number", "customer_name", "amount", "due_at", "wa_id", "company"]
        return super().get_fields(request, obj)

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        return ["number", "amount", "currency", "due_at", "status", "paid_at", "run_link"]

    @admin.display(description=gettext_lazy("customer"), ordering="customer_name")
    def customer(self, invoice):
        return data(invoice.customer_name)

    @admin.display(description=gettext_lazy("reminders' run"))
    def run_link(self, invoice):
        return run_link(invoice.run_id)

    def has_delete_permission(self, request, obj=None):
        return False  # its run would fail at its next step: void it instead

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        issued = invoice_issue(
            number=obj.number,
            customer_name=obj.customer_name,
            amount=obj.amount,
            due_at=obj.due_at,
            wa_id=obj.wa_id,
            company=obj.company,
            actor=request.user.get_username(),
        )
        obj.pk = issued.pk


@admin.register(PaymentEvent)
class PaymentEventAdmin(ProcessWrittenAdmin):
    list_display = ["event_id", "event_type", "invoice", "status", "received_at"]
    list_filter = ["status", "event_type"]
    search_fields = ["event_id", "invoice__number"]
    readonly_fields = [
        "event_id",
        "event_type",
        "invoice",
        "payload",
        "status",
        "note",
        "received_at",
    ]


@admin.register(FinanceTicket)
class FinanceTicketAdmin(ProcessWrittenAdmin):
    list_display = ["invoice", "reason", "resolved", "created_at"]
    list_filter = ["resolved"]
    readonly_fields = ["invoice", "idempotency_key", "reason", "created_at"]


@admin.register(ReconciliationBatch)
class ReconciliationBatchAdmin(ProcessWrittenAdmin):
    list_display = ["date", "status", "corrections_posted", "reconciled_at"]
    list_filter = ["status"]
    readonly_fields = ["run_id"]


@admin.register(LedgerEntry)
class LedgerEntryAdmin(admin.ModelAdmin):
    list_display = ["entry_id", "date", "amount", "is_correction", "created_at"]
    list_filter = ["is_correction", "date"]
    search_fields = ["entry_id", "description"]


@admin.register(BankStatementLine)
class BankStatementLineAdmin(admin.ModelAdmin):
    list_display = ["entry_id", "date", "amount", "description"]
    list_filter = ["date"]
    search_fields = ["entry_id", "description"]


# A WhatsApp message type in the reader's language (the conversation panel's labels, and text).
MESSAGE_TYPE_LABELS = {"text": gettext_lazy("text"), **KIND_LABELS}


def message_type_label(code: str):
    """The label of a WhatsApp message type; a type without one (WhatsApp adds types) as data."""
    return MESSAGE_TYPE_LABELS[code] if code in MESSAGE_TYPE_LABELS else data(code)


def provider_status_label(code: str):
    """A status the provider reported (sent, delivered, read, failed) by our label for it."""
    return label(OutboundStatus, code) if code in OutboundStatus.values else data(code)


def company_link(company):
    if company is None:
        return "-"
    url = reverse("admin:processes_company_change", args=[company.pk])
    return format_html('<a href="{}" translate="no">{}</a>', url, company)


class ValuesFilter(admin.SimpleListFilter):
    """The values a column of codes holds, each by its label (``label_of``); the parameter is
    the one Django's own filter used, so bookmarked lists still filter."""

    field = ""

    def label_of(self, code):
        return data(code)

    def lookups(self, request, model_admin):
        codes = (
            model_admin.get_queryset(request)
            .order_by(self.field)
            .values_list(self.field, flat=True)
            .distinct()
        )
        return [(code, self.label_of(code)) for code in codes]

    def queryset(self, request, queryset):
        if self.value() is not None:
            return queryset.filter(**{self.field: self.value()})
        return queryset


class MessageTypeFilter(ValuesFilter):
    title = gettext_lazy("message type")
    parameter_name = "message_type__exact"
    field = "message_type"

    def label_of(self, code):
        return message_type_label(code)


class BackendFilter(ValuesFilter):
    title = gettext_lazy("sending backend")
    parameter_name = "backend__exact"
    field = "backend"


class ProviderStatusFilter(ValuesFilter):
    title = gettext_lazy("status")
    parameter_name = "status__exact"
    field = "status"

    def label_of(self, code):
        return provider_status_label(code)


class NeedsAttentionFilter(admin.SimpleListFilter):
    title = gettext_lazy("needs attention")
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [("yes", gettext_lazy("Unmatched, unsupported, failed, or never routed"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            never_routed = Q(
                status=InboundStatus.RECEIVED, received_at__lte=clock.now() - STALE_AFTER
            )
            return queryset.filter(
                Q(
                    status__in=[
                        InboundStatus.UNMATCHED,
                        InboundStatus.UNSUPPORTED,
                        InboundStatus.FAILED,
                    ]
                )
                | never_routed
            )
        return queryset


@admin.register(InboundMessage)
class InboundMessageAdmin(ProcessWrittenAdmin):
    list_display = [
        "wamid",
        "message_type_cell",
        "sender_wa_id",
        "sender_user_id",
        "status",
        "company_cell",
        "received_at",
    ]
    list_filter = [NeedsAttentionFilter, "status", MessageTypeFilter]
    list_select_related = ["company"]  # the company column, one join instead of a query a row
    search_fields = ["wamid", "sender_wa_id", "sender_user_id", "note"]
    fields = [
        "wamid",
        "message_type_cell",
        "status",
        "note_text",
        "sender_wa_id",
        "sender_user_id",
        "phone_number_id",
        "company_cell",
        "sent_at",
        "received_at",
        "processed_at",
        "payload_block",
    ]
    readonly_fields = fields
    actions = ["process_again"]

    @admin.display(description=gettext_lazy("message type"), ordering="message_type")
    def message_type_cell(self, message):
        return message_type_label(message.message_type)

    @admin.display(description=gettext_lazy("company"), ordering="company__name")
    def company_cell(self, message):
        return company_link(message.company)

    @admin.display(description=gettext_lazy("note"))
    def note_text(self, message):
        return data(message.note) if message.note else "-"

    @admin.display(description=gettext_lazy("payload"))
    def payload_block(self, message):
        return json_block(message.payload)

    @admin.action(
        description=gettext_lazy("Process the selected failed/received messages again"),
        permissions=["change"],
    )
    def process_again(self, request, queryset):
        done = [
            inbound_process(m.pk).status
            for m in queryset.filter(status__in=[InboundStatus.RECEIVED, InboundStatus.FAILED])
        ]
        outcomes = ", ".join(label(InboundStatus, status) for status in done) or "-"
        self.message_user(
            request,
            ngettext(
                "%(count)d message processed: %(outcomes)s",
                "%(count)d messages processed: %(outcomes)s",
                len(done),
            )
            % {"count": len(done), "outcomes": outcomes},
            messages.INFO,
        )


@admin.register(OutboundMessage)
class OutboundMessageAdmin(ProcessWrittenAdmin):
    list_display = [
        "idempotency_key",
        "to_wa_id",
        "to_user_id",
        "status",
        "template_cell",
        "backend_cell",
        "created_at",
    ]
    list_filter = ["status", BackendFilter]
    search_fields = ["idempotency_key", "to_wa_id", "to_user_id", "provider_message_id", "body"]
    fields = [
        "idempotency_key",
        "company_cell",
        "to_wa_id",
        "to_user_id",
        "body_text",
        "purpose_cell",
        "template_cell",
        "template_language",
        "template_parameters_block",
        "backend_cell",
        "provider_message_id",
        "status",
        "error_text",
        "status_history_block",
        "created_at",
        "sent_at",
        "status_updated_at",
    ]
    readonly_fields = fields

    @admin.display(description=gettext_lazy("company"), ordering="company__name")
    def company_cell(self, message):
        return company_link(message.company)

    @admin.display(description=gettext_lazy("text"))
    def body_text(self, message):
        return data(message.body)

    @admin.display(description=gettext_lazy("template"), ordering="template_name")
    def template_cell(self, message):
        return data(message.template_name) if message.template_name else "-"

    @admin.display(description=gettext_lazy("purpose"), ordering="purpose")
    def purpose_cell(self, message):
        return message.get_purpose_display() if message.purpose else "-"

    @admin.display(description=gettext_lazy("template parameters"))
    def template_parameters_block(self, message):
        return json_block(message.template_parameters) if message.template_parameters else "-"

    @admin.display(description=gettext_lazy("sending backend"), ordering="backend")
    def backend_cell(self, message):
        return data(message.backend)

    @admin.display(description=gettext_lazy("error"))
    def error_text(self, message):
        return data(message.error) if message.error else "-"

    @admin.display(description=gettext_lazy("status history"))
    def status_history_block(self, message):
        return json_block(message.status_history) if message.status_history else "-"


@admin.register(WhatsAppTemplate)
class WhatsAppTemplateAdmin(ProcessWrittenAdmin):
    """What Meta last said of each template (from its webhooks): read-only, the filters find
    the rejected, paused or disabled ones and those of poor quality."""

    list_display = [
        "name_cell",
        "language_cell",
        "status_cell",
        "quality_cell",
        "category_cell",
        "status_at",
        "updated_at",
    ]
    list_filter = ["status", "quality"]
    search_fields = ["name"]
    fields = [
        "name_cell",
        "language_cell",
        "template_id",
        "status_cell",
        "reason_text",
        "status_at",
        "quality_cell",
        "quality_at",
        "category_cell",
        "category_at",
        "updated_at",
    ]
    readonly_fields = fields

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("template"), ordering="name")
    def name_cell(self, template):
        return data(template.name)

    @admin.display(description=gettext_lazy("language"), ordering="language")
    def language_cell(self, template):
        return data(template.language)

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_cell(self, template):
        return label(TemplateStatus, template.status) if template.status else "-"

    @admin.display(description=gettext_lazy("quality"), ordering="quality")
    def quality_cell(self, template):
        return label(TemplateQuality, template.quality) if template.quality else "-"

    @admin.display(description=gettext_lazy("category"), ordering="category")
    def category_cell(self, template):
        return data(template.category) if template.category else "-"

    @admin.display(description=gettext_lazy("reason"))
    def reason_text(self, template):
        return data(template.reason) if template.reason else "-"


@admin.register(AccountEvent)
class AccountEventAdmin(ProcessWrittenAdmin):
    """The business account's events (restrictions, bans, violations), as Meta sent them."""

    list_display = ["occurred_at", "event_cell", "account_id", "received_at", "delivery"]
    list_filter = ["event"]
    fields = ["event_cell", "account_id", "occurred_at", "received_at", "delivery", "detail_block"]
    readonly_fields = fields

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("event"), ordering="event")
    def event_cell(self, event):
        return data(event.event)

    @admin.display(description=gettext_lazy("detail"))
    def detail_block(self, event):
        return json_block(event.detail)


class PendingStatusFilter(admin.SimpleListFilter):
    title = gettext_lazy("applied")
    parameter_name = "applied"

    def lookups(self, request, model_admin):
        return [
            ("no", gettext_lazy("Not yet: no message of ours has this id")),
            ("yes", gettext_lazy("Applied to our message")),
        ]

    def queryset(self, request, queryset):
        if self.value() == "no":
            return queryset.filter(applied_at__isnull=True)
        if self.value() == "yes":
            return queryset.filter(applied_at__isnull=False)
        return queryset


@admin.register(PendingStatus)
class PendingStatusAdmin(ProcessWrittenAdmin):
    """Status callbacks that named a provider id we did not know; ``?applied=no`` is the list of
    those still waiting (a message still being sent, or one we never sent)."""

    list_display = [
        "received_at",
        "provider_message_id",
        "status_cell",
        "timestamp",
        "applied_at",
        "message",
        "delivery",
    ]
    list_filter = [PendingStatusFilter, ProviderStatusFilter]
    search_fields = ["=provider_message_id"]
    fields = [
        "provider_message_id",
        "status_cell",
        "timestamp",
        "received_at",
        "applied_at",
        "message",
        "delivery",
        "where",
        "payload_block",
    ]
    readonly_fields = fields

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_cell(self, pending):
        return provider_status_label(pending.status)

    @admin.display(description=gettext_lazy("payload"))
    def payload_block(self, pending):
        return json_block(pending.payload)


class QuarantineAttentionFilter(admin.SimpleListFilter):
    title = gettext_lazy("needs attention")
    parameter_name = "attention"

    def lookups(self, request, model_admin):
        return [("yes", gettext_lazy("Not handled yet")), ("no", gettext_lazy("Handled"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(resolved_at__isnull=True)
        if self.value() == "no":
            return queryset.filter(resolved_at__isnull=False)
        return queryset


class QuarantinedItemCells:
    """What the processing wrote about a part (its place, the reason, in English): data."""

    @admin.display(description=gettext_lazy("where"), ordering="where")
    def where_cell(self, item):
        return data(item.where)

    @admin.display(description=gettext_lazy("reason"))
    def reason_text(self, item):
        return data(item.reason)


class QuarantinedItemInline(QuarantinedItemCells, admin.TabularInline):
    model = QuarantinedItem
    extra = 0
    fields = ["where_cell", "kind", "reason_text", "resolved_at", "resolved_by"]
    readonly_fields = fields
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    """Read-only: the exact bytes a provider signed, and whether the signature still checks."""

    list_display = ["pk", "source", "received_at", "times_received", "size", "outcome_text"]
    list_filter = ["source"]
    search_fields = ["body_sha256", "outcome"]
    fields = [
        "source",
        "received_at",
        "times_received",
        "remote_addr",
        "body_sha256",
        "signature",
        "signature_valid",
        "outcome_text",
        "body_text",
    ]
    readonly_fields = fields
    inlines = [QuarantinedItemInline]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        # The list shows sizes, not bodies: a delivery may be megabytes.
        return super().get_queryset(request).defer("body").annotate(body_bytes=Length("body"))

    @admin.display(description=gettext_lazy("bytes"), ordering="body_bytes")
    def size(self, delivery):
        return delivery.body_bytes

    @admin.display(description=gettext_lazy("outcome"))
    def outcome_text(self, delivery):
        return data(delivery.outcome) if delivery.outcome else "-"

    @admin.display(description=gettext_lazy("signature checks with today's secret"), boolean=True)
    def signature_valid(self, delivery):
        return delivery_signature_valid(delivery)

    @admin.display(description=gettext_lazy("body (as text; the stored bytes are exact)"))
    def body_text(self, delivery):
        return data(bytes(delivery.body).decode("utf-8", errors="replace"))


@admin.register(QuarantinedItem)
class QuarantinedItemAdmin(QuarantinedItemCells, admin.ModelAdmin):
    """Parts of signed deliveries that could not be processed; ``?attention=yes`` is the work
    list."""

    list_display = [
        "created_at",
        "kind",
        "where_cell",
        "reason_text",
        "delivery",
        "resolved_at",
        "resolved_by",
    ]
    list_filter = [QuarantineAttentionFilter, "kind", "delivery__source"]
    search_fields = ["reason", "fragment", "where"]
    fields = [
        "delivery",
        "where_cell",
        "kind",
        "reason_text",
        "fragment_block",
        "created_at",
        "resolved_at",
        "resolved_by",
    ]
    readonly_fields = fields
    actions = ["mark_handled"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("fragment"))
    def fragment_block(self, item):
        return format_html('<pre translate="no">{}</pre>', item.fragment) if item.fragment else "-"

    @admin.action(
        description=gettext_lazy("Mark the selected items as handled"), permissions=["change"]
    )
    def mark_handled(self, request, queryset):
        count = quarantine_resolve(queryset, actor=request.user.get_username())
        self.message_user(
            request,
            ngettext("%(count)d item marked as handled", "%(count)d items marked as handled", count)
            % {"count": count},
            messages.INFO,
        )
