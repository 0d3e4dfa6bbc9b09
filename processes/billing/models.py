"""Invoices, the payment provider's events, and the finance tickets opened for unpaid ones."""
from django.db import models
from django.utils.translation import gettext_lazy as _


class InvoiceStatus(models.TextChoices):
    OPEN = "open", "Open"
    PAID = "paid", "Paid"
    ESCALATED = "escalated", "Escalated to finance"
    VOIDED = "voided", "Voided"


class Invoice(models.Model):
    """An amount a customer owes. Its reminder run is ``billing:<id>``."""

    number = models.CharField(max_length=32, unique=True)
    customer_name = models.CharField(max_length=200)
    company = models.ForeignKey("processes.Company", null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="invoices")
    wa_id = models.CharField("WhatsApp id (phone)", max_length=128, blank=True)
    amount = models.DecimalField(max_digits=12, decimal_places=2)
    currency = models.CharField(max_length=3, default="BRL")
    due_at = models.DateTimeField()
    status = models.CharField(max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.OPEN)
    paid_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

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
    APPLIED = "applied", "Applied (invoice paid, run signalled)"
    UNMATCHED = "unmatched", "Unmatched (no such invoice)"
    IGNORED = "ignored", "Ignored (event type)"


class PaymentEvent(models.Model):
    """A payment provider event, unique on the provider's id so redeliveries are no-ops."""

    event_id = models.CharField(max_length=128, unique=True)
    event_type = models.CharField(max_length=64)
    invoice = models.ForeignKey(Invoice, null=True, blank=True, on_delete=models.SET_NULL,
                                related_name="payment_events")
    payload = models.JSONField()
    status = models.CharField(max_length=16, choices=PaymentEventStatus.choices)
    note = models.CharField(max_length=300, blank=True)
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("payment event")
        verbose_name_plural = _("payment events")
        ordering = ["-received_at"]

    def __str__(self):
        return f"{self.event_type} {self.event_id}"


class FinanceTicket(models.Model):
    """A task for the finance team: one per invoice, however often the step runs."""

    invoice = models.OneToOneField(Invoice, on_delete=models.PROTECT, related_name="finance_ticket")
    idempotency_key = models.CharField(max_length=255, unique=True)
    reason = models.CharField(max_length=300)
    resolved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("finance ticket")
        verbose_name_plural = _("finance tickets")

    def __str__(self):
        return f"ticket for {self.invoice.number}"
