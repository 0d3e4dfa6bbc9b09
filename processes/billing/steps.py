"""The effects of billing reminders, each run as a journaled step."""

from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.utils import timezone

from durable import services
from processes import conf
from processes.billing.models import FinanceTicket, Invoice, InvoiceStatus
from processes.billing.rules import due_at_problem
from processes.whatsapp.services import message_send


def invoice_due_at(invoice_id: int) -> datetime:
    return Invoice.objects.get(pk=invoice_id).due_at


def invoice_void_settle(invoice_id: int) -> str:
    """A void reached the run (atomic, under the invoice's lock): "paid" if a payment got
    there first (payment wins), else the invoice is voided and "voided"."""
    invoice = Invoice.objects.select_for_update().get(pk=invoice_id)
    if invoice.status == InvoiceStatus.PAID:
        return "paid"
    if invoice.status != InvoiceStatus.VOIDED:
        invoice.status = InvoiceStatus.VOIDED
        invoice.save(update_fields=["status"])
    return "voided"


def invoice_void_apply(invoice_id: int, reason: str) -> str:
    """The void update's decision (atomic, under the invoice's lock): the invoice's status
    when it cannot be voided ("paid" wins); else it is voided and the run is handed
    ``voided`` for the wait it is in, both committed with this step's journal entry."""
    invoice = Invoice.objects.select_for_update().get(pk=invoice_id)
    if invoice.status in (InvoiceStatus.PAID, InvoiceStatus.ESCALATED):
        return str(invoice.status)
    if invoice.status != InvoiceStatus.VOIDED:
        invoice.status = InvoiceStatus.VOIDED
        invoice.save(update_fields=["status"])
    _tell_own_run(invoice, "voided", {"reason": reason}, dedupe_key=f"void:{invoice.pk}")
    return "voided"


def invoice_due_date_apply(invoice_id: int, due_at: str) -> str:
    """The due-date update's decision (atomic, under the invoice's lock): "changed", or
    "unchanged" for the date it already has; else why not: the invoice's status when it is
    not open, or the date's problem (in the past, too far: the same rule as every surface,
    here for the run update API too). Changed, the run is handed ``due_date_changed``, keyed
    by the move (from -> to), so moving back to an earlier date is a move of its own."""
    invoice = Invoice.objects.select_for_update().get(pk=invoice_id)
    if invoice.status != InvoiceStatus.OPEN:
        return str(invoice.status)
    new_due = datetime.fromisoformat(due_at)
    problem = due_at_problem(new_due)
    if problem:
        return problem
    if new_due == invoice.due_at:
        return "unchanged"
    moved = f"due:{invoice.pk}:{invoice.due_at.isoformat()}->{new_due.isoformat()}"
    invoice.due_at = new_due
    invoice.save(update_fields=["due_at"])
    _tell_own_run(invoice, "due_date_changed", {"due_at": due_at}, dedupe_key=moved)
    return "changed"


def _tell_own_run(invoice: Invoice, name: str, payload: dict, *, dedupe_key: str) -> None:
    services.signal_send(
        invoice.run_id, name, payload, dedupe_key=dedupe_key, actor=f"billing:update:{name}"
    )


# What send_reminder returns, followed by the invoice's status, when it did not send: the
# row was settled outside the run (by hand in the database: the admin no longer edits it).
NOT_SENT = "not sent: the invoice is "


def money_pt(amount, currency: str = "BRL") -> str:
    """An amount as a Brazilian customer reads it: R$ 1.234,50 (another currency by its code)."""
    grouped = (
        f"{Decimal(amount).quantize(Decimal('0.01')):,.2f}".replace(",", "_")
        .replace(".", ",")
        .replace("_", ".")
    )
    return f"R$ {grouped}" if currency == "BRL" else f"{currency} {grouped}"


def send_reminder(invoice_id: int, number: int, idempotency_key: str) -> str:
    """The reminder, only for an invoice that is still open."""
    invoice = Invoice.objects.select_related("company").get(pk=invoice_id)
    if invoice.status != InvoiceStatus.OPEN:
        return f"{NOT_SENT}{invoice.status}"
    due = timezone.localtime(
        invoice.due_at, ZoneInfo(conf.setting("CUSTOMER_TIME_ZONE", "America/Sao_Paulo"))
    )
    body = (
        f"Lembrete {number}: a fatura {invoice.number} de "
        f"{money_pt(invoice.amount, invoice.currency)} venceu em {due:%d/%m/%Y}."
    )
    to_wa_id = invoice.wa_id or (invoice.company.wa_id if invoice.company else "") or ""
    return message_send(
        idempotency_key=idempotency_key,
        body=body,
        company=None,
        to_wa_id=to_wa_id,
        purpose="billing_reminder",
        parameters={
            "number": number,
            "invoice": invoice.number,
            "amount": money_pt(invoice.amount, invoice.currency),
            "due_date": f"{due:%d/%m/%Y}",
        },
    ).idempotency_key


def open_finance_ticket(invoice_id: int, idempotency_key: str) -> int:
    """One ticket per invoice (atomic step, unique per invoice and per key)."""
    ticket, _ = FinanceTicket.objects.get_or_create(
        invoice_id=invoice_id,
        defaults={"idempotency_key": idempotency_key, "reason": "unpaid after two reminders"},
    )
    Invoice.objects.filter(pk=invoice_id, status=InvoiceStatus.OPEN).update(
        status=InvoiceStatus.ESCALATED
    )
    return ticket.pk
