"""Messages in and out of WhatsApp, stored before anything acts on them."""
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils import timezone


class InboundStatus(models.TextChoices):
    RECEIVED = "received", "Received (not processed yet)"
    PROCESSED = "processed", "Processed (delivered to a run)"
    KEPT = "kept", "Kept (text: nothing waits for it)"
    UNMATCHED = "unmatched", "Unmatched (no run to deliver to)"
    UNSUPPORTED = "unsupported", "Unsupported message type"
    FAILED = "failed", "Failed (see note; process again from the admin)"


class InboundMessage(models.Model):
    """One message as the provider sent it, unique on its id so redeliveries are no-ops."""

    wamid = models.CharField("message id", max_length=128, unique=True)
    message_type = models.CharField(max_length=32)
    sender_wa_id = models.CharField(max_length=128, blank=True)
    sender_user_id = models.CharField(max_length=128, blank=True)
    phone_number_id = models.CharField(max_length=64, blank=True)
    payload = models.JSONField(help_text="the message object, with its contact and metadata")
    sent_at = models.DateTimeField(null=True, blank=True)
    received_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=16, choices=InboundStatus.choices, default=InboundStatus.RECEIVED)
    note = models.TextField(blank=True)
    company = models.ForeignKey("processes.Company", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="inbound_messages")
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("inbound WhatsApp message")
        verbose_name_plural = _("inbound WhatsApp messages")
        ordering = ["-received_at"]
        indexes = [models.Index(fields=["status", "received_at"])]

    def __str__(self):
        return f"{self.message_type} from {self.sender_wa_id or self.sender_user_id} ({self.wamid})"


class OutboundStatus(models.TextChoices):
    QUEUED = "queued", _("queued")
    SENT = "sent", _("sent")
    DELIVERED = "delivered", _("delivered")
    READ = "read", _("read")
    FAILED = "failed", _("failed")


# Statuses only move forward: a late "delivered" must not undo "read".
STATUS_RANK = {OutboundStatus.QUEUED: 0, OutboundStatus.SENT: 1, OutboundStatus.DELIVERED: 2,
               OutboundStatus.READ: 3, OutboundStatus.FAILED: 4}


class OutboundMessage(models.Model):
    """A message we send, unique on its idempotency key so a step that runs twice sends once."""

    idempotency_key = models.CharField(max_length=255, unique=True)
    company = models.ForeignKey("processes.Company", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="outbound_messages")
    to_wa_id = models.CharField(max_length=128, blank=True)
    to_user_id = models.CharField(max_length=128, blank=True)
    body = models.TextField()
    template_name = models.CharField(max_length=100, blank=True,
                                     help_text="set when sent as a template (outside the 24-hour window)")
    backend = models.CharField(max_length=32)
    provider_message_id = models.CharField(max_length=128, null=True, blank=True, unique=True)
    status = models.CharField(max_length=16, choices=OutboundStatus.choices, default=OutboundStatus.QUEUED)
    error = models.TextField(blank=True)
    status_history = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)
    status_updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = _("outbound WhatsApp message")
        verbose_name_plural = _("outbound WhatsApp messages")
        ordering = ["-created_at"]

    def __str__(self):
        return f"to {self.to_wa_id or self.to_user_id}: {self.body[:40]}"


class PendingStatus(models.Model):
    """A status callback (sent, delivered, read, failed) that named a provider message id we
    had not recorded yet, kept instead of dropped.

    The provider may report a status before our send has stored the id it returned, or
    for a message sent by something else entirely. ``message_send`` applies the pending
    statuses of an id, in the provider's order, once an outbound message gets it; the
    rest stay in the admin with ``applied_at`` empty for an operator to look at.
    """

    provider_message_id = models.CharField(max_length=128, db_index=True)
    status = models.CharField(max_length=32)
    timestamp = models.CharField(max_length=32, blank=True, help_text="as the provider sent it (Unix seconds)")
    payload = models.JSONField(help_text="the status object as received")
    delivery = models.ForeignKey("processes.WebhookDelivery", null=True, blank=True, on_delete=models.PROTECT,
                                 related_name="pending_statuses")
    where = models.CharField(max_length=255, blank=True, help_text="the status's place in the delivery")
    received_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    message = models.ForeignKey(OutboundMessage, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="pending_statuses", help_text="the message it was applied to")

    class Meta:
        verbose_name = _("status for an unknown message")
        verbose_name_plural = _("statuses for unknown messages")
        ordering = ["-received_at"]
        indexes = [models.Index(fields=["applied_at", "received_at"])]
        constraints = [models.UniqueConstraint(fields=["provider_message_id", "status", "timestamp"],
                                               name="pending_status_once")]

    def __str__(self):
        return f"{self.status} for {self.provider_message_id}"
