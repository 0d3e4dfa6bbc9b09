"""Messages in and out of WhatsApp, stored before anything acts on them."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _


class InboundStatus(models.TextChoices):
    RECEIVED = "received", _("Received (not processed yet)")
    PROCESSED = "processed", _("Processed (delivered to a run)")
    KEPT = "kept", _("Kept (text: nothing waits for it)")
    UNMATCHED = "unmatched", _("Unmatched (no run to deliver to)")
    UNSUPPORTED = "unsupported", _("Unsupported message type")
    FAILED = "failed", _("Failed (see note; process again from the admin)")


# A customer's change to a message already sent (``edit``, ``revoke``): it names the message it
# changes.
CHANGE_TYPES = ("edit", "revoke")


class InboundMessage(models.Model):
    """One message as the provider sent it, unique on its id so redeliveries are no-ops."""

    wamid = models.CharField(_("message id"), max_length=128, unique=True)
    message_type = models.CharField(_("message type"), max_length=32)
    sender_wa_id = models.CharField(_("sender's WhatsApp id (phone)"), max_length=128, blank=True)
    sender_user_id = models.CharField(
        _("sender's business-scoped user id"), max_length=128, blank=True
    )
    phone_number_id = models.CharField(_("receiving phone number id"), max_length=64, blank=True)
    payload = models.JSONField(
        _("payload"), help_text=_("the message object, with its contact and metadata")
    )
    sent_at = models.DateTimeField(pgettext_lazy("message", "sent at"), null=True, blank=True)
    received_at = models.DateTimeField(
        pgettext_lazy("message", "received at"), default=timezone.now
    )
    status = models.CharField(
        _("status"), max_length=16, choices=InboundStatus.choices, default=InboundStatus.RECEIVED
    )
    note = models.TextField(_("note"), blank=True)
    company = models.ForeignKey(
        "processes.Company",
        verbose_name=_("company"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="inbound_messages",
    )
    processed_at = models.DateTimeField(
        pgettext_lazy("message", "processed at"), null=True, blank=True
    )

    class Meta:
        verbose_name = _("inbound WhatsApp message")
        verbose_name_plural = _("inbound WhatsApp messages")
        ordering = ["-received_at"]
        indexes = [
            models.Index(fields=["status", "received_at"]),
            # Each message routed asks for the edits and deletions that named it before it
            # arrived: those few rows, not every message kept for an operator.
            models.Index(
                fields=["received_at"],
                name="inbound_changes_waiting",
                condition=models.Q(status=InboundStatus.UNMATCHED, message_type__in=CHANGE_TYPES),
            ),
        ]

    def __str__(self):
        return gettext("message %(id)s from %(sender)s") % {
            "id": self.wamid,
            "sender": self.sender_wa_id or self.sender_user_id,
        }


class MessagePurpose(models.TextChoices):
    """What an outbound message is for (processes/whatsapp/templates.py, PURPOSES): the
    template it goes out as outside the 24-hour window."""

    GENERIC = "generic", pgettext_lazy("message purpose", "Other")
    GREETING = "greeting", pgettext_lazy("message purpose", "Greeting")
    DOCUMENTS_REQUEST = "documents_request", pgettext_lazy("message purpose", "Documents request")
    DOCUMENT_REMINDER = "document_reminder", pgettext_lazy("message purpose", "Documents reminder")
    DECISION_APPROVED = "decision_approved", pgettext_lazy("message purpose", "Decision: approved")
    DECISION_REJECTED = "decision_rejected", pgettext_lazy("message purpose", "Decision: rejected")
    DECISION_MORE_DOCUMENTS = (
        "decision_more_documents",
        pgettext_lazy("message purpose", "Decision: more documents"),
    )
    BILLING_REMINDER = "billing_reminder", pgettext_lazy("message purpose", "Billing reminder")


class OutboundStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    SENT = "sent", _("sent")
    DELIVERED = "delivered", _("delivered")
    READ = "read", _("read")
    FAILED = "failed", _("failed")


# Statuses only move forward: a late "delivered" must not undo "read".
STATUS_RANK = {
    OutboundStatus.QUEUED: 0,
    OutboundStatus.SENT: 1,
    OutboundStatus.DELIVERED: 2,
    OutboundStatus.READ: 3,
    OutboundStatus.FAILED: 4,
}


class OutboundMessage(models.Model):
    """A message we send, unique on its idempotency key so a step that runs twice sends once."""

    idempotency_key = models.CharField(_("idempotency key"), max_length=255, unique=True)
    company = models.ForeignKey(
        "processes.Company",
        verbose_name=_("company"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="outbound_messages",
    )
    to_wa_id = models.CharField(_("recipient's WhatsApp id (phone)"), max_length=128, blank=True)
    to_user_id = models.CharField(
        _("recipient's business-scoped user id"), max_length=128, blank=True
    )
    body = models.TextField(_("text"))
    options = models.JSONField(
        _("options"),
        default=dict,
        blank=True,
        help_text=_("reply buttons or a list offered with the text, and their ids"),
    )
    as_text = models.BooleanField(
        _("options sent as text"),
        default=False,
        help_text=_(
            "the options were sent as numbered lines: the customer's "
            "client could not show buttons or a list"
        ),
    )
    answered_at = models.DateTimeField(
        _("answered at"),
        null=True,
        blank=True,
        help_text=_("when the customer chose one of its options"),
    )
    template_name = models.CharField(
        _("template"),
        max_length=100,
        blank=True,
        help_text=_("set when sent as a template (outside the 24-hour window)"),
    )
    template_language = models.CharField(_("template language"), max_length=16, blank=True)
    template_parameters = models.JSONField(
        _("template parameters"),
        default=list,
        blank=True,
        help_text=_("the parameters sent, in the template's order"),
    )
    purpose = models.CharField(
        _("purpose"),
        max_length=32,
        blank=True,
        choices=MessagePurpose.choices,
        help_text=_("what the message is for; names its template"),
    )
    backend = models.CharField(_("sending backend"), max_length=32)
    provider_message_id = models.CharField(
        _("provider's message id"), max_length=128, null=True, blank=True, unique=True
    )
    status = models.CharField(
        _("status"), max_length=16, choices=OutboundStatus.choices, default=OutboundStatus.QUEUED
    )
    error = models.TextField(_("error"), blank=True)
    status_history = models.JSONField(_("status history"), default=list, blank=True)
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    sent_at = models.DateTimeField(pgettext_lazy("message", "sent at"), null=True, blank=True)
    status_updated_at = models.DateTimeField(_("status updated at"), null=True, blank=True)

    class Meta:
        verbose_name = _("outbound WhatsApp message")
        verbose_name_plural = _("outbound WhatsApp messages")
        ordering = ["-created_at"]

    def __str__(self):
        return gettext("to %(recipient)s (%(key)s)") % {
            "recipient": self.to_wa_id or self.to_user_id,
            "key": self.idempotency_key,
        }


class PendingStatus(models.Model):
    """A status callback (sent, delivered, read, failed) that named a provider message id we
    had not recorded yet, kept instead of dropped.

    The provider may report a status before our send has stored the id it returned, or
    for a message sent by something else entirely. ``message_send`` applies the pending
    statuses of an id, in the provider's order, once an outbound message gets it; the
    rest stay in the admin with ``applied_at`` empty for an operator to look at.
    """

    provider_message_id = models.CharField(
        _("provider's message id"), max_length=128, db_index=True
    )
    status = models.CharField(_("status"), max_length=32)
    timestamp = models.CharField(
        _("provider's timestamp"),
        max_length=32,
        blank=True,
        help_text=_("as the provider sent it (Unix seconds)"),
    )
    payload = models.JSONField(_("payload"), help_text=_("the status object as received"))
    delivery = models.ForeignKey(
        "processes.WebhookDelivery",
        verbose_name=_("webhook delivery"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="pending_statuses",
    )
    where = models.CharField(
        _("where"), max_length=255, blank=True, help_text=_("the status's place in the delivery")
    )
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    applied_at = models.DateTimeField(_("applied at"), null=True, blank=True)
    message = models.ForeignKey(
        OutboundMessage,
        verbose_name=_("message"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="pending_statuses",
        help_text=_("the message it was applied to"),
    )

    class Meta:
        verbose_name = _("status for an unknown message")
        verbose_name_plural = _("statuses for unknown messages")
        ordering = ["-received_at"]
        indexes = [models.Index(fields=["applied_at", "received_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["provider_message_id", "status", "timestamp"], name="pending_status_once"
            )
        ]

    def __str__(self):
        status = (
            OutboundStatus(self.status).label
            if self.status in OutboundStatus.values
            else self.status
        )
        return gettext("%(status)s for %(id)s") % {"status": status, "id": self.provider_message_id}


class TemplateStatus(models.TextChoices):
    """Meta's review states of a template (``message_template_status_update``)."""

    APPROVED = "APPROVED", _("approved")
    PENDING = "PENDING", _("pending review")
    REJECTED = "REJECTED", _("rejected")
    PAUSED = "PAUSED", _("paused")
    DISABLED = "DISABLED", _("disabled")
    FLAGGED = "FLAGGED", _("flagged")
    IN_APPEAL = "IN_APPEAL", _("in appeal")
    REINSTATED = "REINSTATED", _("reinstated")
    PENDING_DELETION = "PENDING_DELETION", _("pending deletion")
    DELETED = "DELETED", _("deleted")


class TemplateQuality(models.TextChoices):
    """Meta's quality rating of a template (``message_template_quality_update``)."""

    GREEN = "GREEN", _("high (green)")
    YELLOW = "YELLOW", _("medium (yellow)")
    RED = "RED", _("low (red)")
    UNKNOWN = "UNKNOWN", _("not rated yet")


class WhatsAppTemplate(models.Model):
    """What Meta last said of one template in one language: its review status, quality and
    category, each with the time Meta said it, so an older event arriving late changes nothing."""

    name = models.CharField(_("template"), max_length=512)
    language = models.CharField(_("language"), max_length=16)
    template_id = models.CharField(_("Meta's template id"), max_length=64, blank=True)
    status = models.CharField(
        _("status"), max_length=32, blank=True, choices=TemplateStatus.choices
    )
    reason = models.TextField(
        _("reason"), blank=True, help_text=_("why Meta rejected, paused or disabled it")
    )
    status_at = models.DateTimeField(_("status since"), null=True, blank=True)
    quality = models.CharField(
        _("quality"), max_length=16, blank=True, choices=TemplateQuality.choices
    )
    quality_at = models.DateTimeField(_("quality since"), null=True, blank=True)
    category = models.CharField(_("category"), max_length=32, blank=True)
    category_at = models.DateTimeField(_("category since"), null=True, blank=True)
    updated_at = models.DateTimeField(_("updated at"), default=timezone.now)

    class Meta:
        verbose_name = _("WhatsApp template")
        verbose_name_plural = _("WhatsApp templates")
        ordering = ["name", "language"]
        constraints = [
            models.UniqueConstraint(fields=["name", "language"], name="whatsapp_template_once")
        ]

    def __str__(self):
        return f"{self.name} ({self.language})"


class AccountEvent(models.Model):
    """An ``account_update`` of the WhatsApp Business Account (a restriction, a ban, a
    violation...), kept whole; unique on its content, so a redelivery is one row."""

    event = models.CharField(_("event"), max_length=64)
    account_id = models.CharField(_("business account id"), max_length=64, blank=True)
    detail = models.JSONField(_("detail"), help_text=_("the change's value as received"))
    fingerprint = models.CharField(_("fingerprint"), max_length=64, unique=True)
    occurred_at = models.DateTimeField(_("occurred at"), null=True, blank=True)
    received_at = models.DateTimeField(_("received at"), default=timezone.now)
    delivery = models.ForeignKey(
        "processes.WebhookDelivery",
        verbose_name=_("webhook delivery"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="account_events",
    )

    class Meta:
        verbose_name = _("WhatsApp account event")
        verbose_name_plural = _("WhatsApp account events")
        ordering = ["-occurred_at", "-pk"]
        indexes = [models.Index(fields=["event", "occurred_at"])]

    def __str__(self):
        return f"{self.event} ({self.account_id})" if self.account_id else self.event
