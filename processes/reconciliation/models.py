"""Reconciliation batches, the fake bank's statement lines and our ledger."""

from django.db import models
from django.utils.translation import gettext_lazy as _


class BatchStatus(models.TextChoices):
    OPEN = "open", _("Open")
    RECONCILED = "reconciled", _("Reconciled")


class ReconciliationBatch(models.Model):
    """One business day to reconcile. Its run is ``reconcile:<date>``."""

    date = models.DateField(_("date"), unique=True)
    status = models.CharField(
        _("status"), max_length=16, choices=BatchStatus.choices, default=BatchStatus.OPEN
    )
    corrections_posted = models.PositiveIntegerField(_("corrections posted"), default=0)
    reconciled_at = models.DateTimeField(_("reconciled at"), null=True, blank=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("reconciliation batch")
        verbose_name_plural = _("reconciliation batches")
        ordering = ["-date"]

    def __str__(self):
        return f"batch {self.date}"

    @property
    def run_id(self) -> str:
        return f"reconcile:{self.date.isoformat()}"


class BankStatementLine(models.Model):
    """What the (fake, local) bank reports for a day; a real bank client replaces this table."""

    entry_id = models.CharField(_("entry id"), max_length=64, unique=True)
    date = models.DateField(_("date"), db_index=True)
    amount = models.DecimalField(_("amount"), max_digits=14, decimal_places=2)
    description = models.CharField(_("description"), max_length=200, blank=True)

    class Meta:
        verbose_name = _("bank statement line")
        verbose_name_plural = _("bank statement lines")
        ordering = ["date", "entry_id"]

    def __str__(self):
        return f"{self.entry_id} {self.amount}"


class LedgerEntry(models.Model):
    """Our books. ``entry_id`` is the bank's id, so a correction can only be posted once."""

    entry_id = models.CharField(_("entry id"), max_length=64, unique=True)
    date = models.DateField(_("date"), db_index=True)
    amount = models.DecimalField(_("amount"), max_digits=14, decimal_places=2)
    description = models.CharField(_("description"), max_length=200, blank=True)
    is_correction = models.BooleanField(_("correction"), default=False)
    idempotency_key = models.CharField(
        _("idempotency key"), max_length=255, null=True, blank=True, unique=True
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("ledger entry")
        verbose_name_plural = _("ledger entries")
        ordering = ["date", "entry_id"]

    def __str__(self):
        return f"{self.entry_id} {self.amount}"
