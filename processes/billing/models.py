"""Invoices, the payment provider's events, and the finance tickets opened for unpaid ones."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class InvoiceStatus(models.TextChoices):
    OPEN = "open", _("Open")
    PAID = "paid", _("Paid")
    ESCALATED = "escalated", _("Escalated to finance")
    VOIDED = "voided", _("Voided")


class Invoice(models.Model):
    """An amount a customer owes. Its reminder run is ``billing:<id>``."""

    number = models.CharField(_("number"), max_length=32, unique=True)
    customer_name = models.CharField(_("customer"), max_length=200)
    company = models.ForeignKey(
        "processes.Company",
        verbose_name=_("company"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="invoices",
    )
    wa_id = models.CharField(_("WhatsApp id (phone)"), max_length=128, blank=True)
    amount = models.DecimalField(_("amount"), max_digits=12, decimal_places=2)
    currency = models.CharField(_("currency"), max_length=3, default="BRL")
    due_at = models.DateTimeField(
        _("due at"),
    )
    status = models.CharField(
        _("status"), max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.OPEN
    )
    paid_at = models.DateTimeField(_("paid at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("invoice")
        verbose_name_plural = _("invoices")
        ordering = ["-due_at"]

    def __str__(self):
        return f"{self.number} ({self.amount} {self.currency})"

    @property
    def run_id(self) -> str:
        return f"billing:{self.pk}"


class PaymentEventStatus(models.TextChoices):
    APPLIED = "applied", _("Applied (invoice paid, run signalled)")
    UNMATCHED = "unmatched", _("Unmatched (no such invoice)")
    IGNORED = "ignored", _("Ignored (event type)")


class PaymentEvent(models.Model):
    """A payment provider event, unique on the provider's id so redeliveries are no-ops."""

    event_id = models.CharField(_("event id"), max_length=128, unique=True)
    event_type = models.CharField(_("event type"), max_length=64)
    invoice = models.ForeignKey(
        Invoice,
        verbose_name=_("invoice"),
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="payment_events",
    )
    payload = models.JSONField(
        _("payload"),
    )
    status = models.CharField(_("status"), max_length=16, choices=PaymentEventStatus.choices)
    note = models.CharField(_("note"), max_length=300, blank=True)
    received_at = models.DateTimeField(_("received at"), auto_now_add=True)

    class Meta:
        verbose_name = _("payment event")
        verbose_name_plural = _("payment events")
        ordering = ["-received_at"]

    def __str__(self):
        return f"{self.event_type} {self.event_id}"


class FinanceTicket(models.Model):
    """A task for the finance team: one per invoice, however often the step runs."""

    invoice = models.OneToOneField(
        Invoice, verbose_name=_("invoice"), on_delete=models.PROTECT, related_name="finance_ticket"
    )
    idempotency_key = models.CharField(_("idempotency key"), max_length=255, unique=True)
    reason = models.CharField(_("reason"), max_length=300)
    resolved = models.BooleanField(_("resolved"), default=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("finance ticket")
        verbose_name_plural = _("finance tickets")

    def __str__(self):
        return f"ticket for {self.invoice.number}"
