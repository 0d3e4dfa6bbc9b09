"""The effects of billing reminders, each run as a journaled step."""
from datetime import datetime

from processes.billing.models import FinanceTicket, Invoice, InvoiceStatus
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


def send_reminder(invoice_id: int, number: int, idempotency_key: str) -> str:
    invoice = Invoice.objects.select_related("company").get(pk=invoice_id)
    body = (f"Lembrete {number}: a fatura {invoice.number} de {invoice.amount} {invoice.currency} "
            f"venceu em {invoice.due_at:%d/%m/%Y}.")
    to_wa_id = invoice.wa_id or (invoice.company.wa_id if invoice.company else "") or ""
    return message_send(idempotency_key=idempotency_key, body=body, company=None,
                        to_wa_id=to_wa_id).idempotency_key


def open_finance_ticket(invoice_id: int, idempotency_key: str) -> int:
    """One ticket per invoice (atomic step, unique per invoice and per key)."""
    ticket, _ = FinanceTicket.objects.get_or_create(invoice_id=invoice_id, defaults={
        "idempotency_key": idempotency_key, "reason": "unpaid after two reminders"})
    Invoice.objects.filter(pk=invoice_id, status=InvoiceStatus.OPEN).update(status=InvoiceStatus.ESCALATED)
    return ticket.pk
