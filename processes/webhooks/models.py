"""Every correctly signed webhook delivery, kept as its exact bytes, and the parts of one
that could not be processed (quarantined for an operator)."""

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _


class WebhookSource(models.TextChoices):
    WHATSAPP = "whatsapp", "WhatsApp"
    PAYMENTS = "payments", _("Payments")


class WebhookDelivery(models.Model):
    """The body exactly as signed, so the signature can be checked again later.

    Unique on (source, sha256 of the body): the provider's redelivery of the same bytes is
    the same row, counted in ``times_received``.
    """

    source = models.CharField(_("source"), max_length=16, choices=WebhookSource.choices)
    body = models.BinaryField(_("body"), help_text=_("the raw request body, byte for byte"))
    body_sha256 = models.CharField(_("body's SHA-256"), max_length=64)
    signature = models.CharField(
        _("signature"), max_length=255, help_text=_("the signature header as received")
    )
    remote_addr = models.CharField(_("remote address"), max_length=64, blank=True)
    received_at = models.DateTimeField(
        pgettext_lazy("delivery", "received at"), default=timezone.now
    )
    times_received = models.PositiveIntegerField(_("times received"), default=1)
    outcome = models.TextField(_("outcome"), blank=True, help_text=_("what processing made of it"))
    # Null while the intake has not processed it (its messages stored and routed): the
    # webhook only stores the delivery, a worker processes it (processes.whatsapp.services).
    processed_at = models.DateTimeField(
        pgettext_lazy("delivery", "processed at"), null=True, blank=True
    )

    class Meta:
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        ordering = ["-received_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["source", "body_sha256"], name="webhook_delivery_unique_body"
            )
        ]
        # The intake's line: the pending deliveries of a source, oldest first.
        indexes = [
            models.Index(
                fields=["source", "id"],
                condition=models.Q(processed_at__isnull=True),
                name="webhook_delivery_pending",
            )
        ]

    def __str__(self):
        return gettext("%(source)s delivery %(id)s (%(size)s bytes)") % {
            "source": self.get_source_display(),
            "id": self.pk,
            "size": len(self.body or b""),
        }


class QuarantineKind(models.TextChoices):
    """Which part of a delivery was set aside: WhatsApp's messages and statuses sit in changes,
    changes in entries; a payment delivery is one event."""

    MESSAGE = "message", pgettext_lazy("webhook part", "Message")
    STATUS = "status", pgettext_lazy("webhook part", "Status update")
    CHANGE = "change", pgettext_lazy("webhook part", "Change")
    ENTRY = "entry", pgettext_lazy("webhook part", "Entry")
    DELIVERY = "delivery", pgettext_lazy("webhook part", "Whole delivery")
    PAYMENT = "payment", pgettext_lazy("webhook part", "Payment event")


class QuarantinedItem(models.Model):
    """A part of a signed delivery that could not be parsed or processed; the rest went on.

    ``fragment`` is the part as ASCII-escaped JSON text, so even a lone surrogate or a NUL
    character is stored and displayed safely; the exact bytes stay on the delivery.
    """

    delivery = models.ForeignKey(
        WebhookDelivery,
        verbose_name=_("webhook delivery"),
        on_delete=models.PROTECT,
        related_name="quarantined",
    )
    where = models.CharField(
        _("where"),
        max_length=255,
        help_text=_("the path of the part in the body, e.g. entry[0].changes[0].value.messages[2]"),
    )
    kind = models.CharField(_("kind"), max_length=32, choices=QuarantineKind.choices)
    reason = models.TextField(_("reason"))
    fragment = models.TextField(
        _("fragment"),
        blank=True,
        help_text=_("the part as JSON text, non-ASCII characters escaped"),
    )
    created_at = models.DateTimeField(_("created at"), default=timezone.now)
    resolved_at = models.DateTimeField(_("handled at"), null=True, blank=True)
    resolved_by = models.CharField(_("handled by"), max_length=150, blank=True)

    class Meta:
        verbose_name = _("quarantined item")
        verbose_name_plural = _("quarantined items")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["resolved_at", "created_at"])]
        constraints = [
            models.UniqueConstraint(
                fields=["delivery", "where"], name="quarantined_item_once_per_place"
            )
        ]

    def __str__(self):
        return gettext("%(kind)s at %(where)s") % {
            "kind": self.get_kind_display(),
            "where": self.where,
        }
