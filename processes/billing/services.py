"""Writes of billing: issue an invoice (and start its reminders), record a payment event."""

import logging
from decimal import Decimal

from django.db import IntegrityError, transaction

from durable import clock, services
from durable.errors import RunFinished, RunNotFound, UpdateFailed, UpdateRejected, UpdateTimeout
from processes.billing import rules
from processes.billing.models import Invoice, InvoiceStatus, PaymentEvent, PaymentEventStatus
from processes.billing.rules import REASON_MAX, due_at_problem
from processes.webhooks.services import TooDeep, is_verbatim, storable

log = logging.getLogger(__name__)

PAID_EVENT_TYPES = {"payment.succeeded", "invoice.paid"}


class InvoiceSettled(Exception):
    """The invoice is paid or voided: it cannot be voided or renegotiated any more.
    ``status``: the invoice's status that refused it, or "ended" (its run is over)."""

    def __init__(self, message: str, status: str = ""):
        self.status = status
        super().__init__(message)


class PaymentPayloadInvalid(ValueError):
    """The body is JSON but not a payment event; the message says what is wrong."""


class PaymentFieldTooLong(PaymentPayloadInvalid):
    """A payment event's field is longer than the column it goes to. Neither cut (two ids must
    not become one) nor refused (the provider would send the same bytes forever): the
    webhook quarantines it, at ``where``, for an operator."""

    def __init__(self, where: str, length: int, limit: int):
        super().__init__(
            f"a payment event's {where!r} has {length} characters; at most {limit} are stored"
        )
        self.where = where


def invoice_issue(
    *,
    number: str,
    customer_name: str,
    amount: Decimal,
    due_at,
    wa_id: str = "",
    company=None,
    actor: str,
) -> Invoice:
    """Create the invoice and start its reminders (``billing:<id>``) in one transaction."""
    with transaction.atomic():
        invoice, _ = Invoice.objects.get_or_create(
            number=number,
            defaults={
                "customer_name": customer_name,
                "amount": amount,
                "due_at": due_at,
                "wa_id": wa_id,
                "company": company,
            },
        )
        services.run_start("billing", invoice.pk, id=invoice.run_id, actor=actor)
    return invoice


def invoice_void(
    invoice: Invoice,
    *,
    actor: str,
    reason: str = "",
    timeout: float | None = None,
    audit: dict | None = None,
) -> bool:
    """Void an invoice whose reminders are pending: its run ends with no further reminder.

    Sent to the run as the update ``void``; the run decides under the invoice's lock. A
    paid invoice cannot be voided (InvoiceSettled, with the reason): payment wins, and a
    payment that lands after the void still wins, recorded once. Returns True once the
    run applied it, False if it did not within ``timeout`` seconds: it is stored and will
    be (ask again for its outcome: the same void is the same update). ``timeout``: by
    default an operator's (rules.OPERATOR_WAIT_SECONDS).
    """
    if not isinstance(reason, str) or len(reason) > REASON_MAX:
        raise ValueError(f"a void's reason is text of at most {REASON_MAX} characters")
    return _update(
        invoice,
        "void",
        {"reason": reason},
        dedupe_key=f"void:{invoice.pk}",
        actor=actor,
        timeout=timeout,
        audit=audit,
        refused=(InvoiceStatus.PAID, InvoiceStatus.VOIDED),
        without_run=lambda: _void_directly(invoice),
    )


def invoice_due_date_change(
    invoice: Invoice,
    *,
    due_at,
    actor: str,
    reason: str = "",
    timeout: float | None = None,
    audit: dict | None = None,
) -> bool:
    """Renegotiate an open invoice: a new due date restarts the reminder schedule from it.

    Sent to the run as the update ``change_due_date``; the run writes the date under the
    invoice's lock (the row is the one truth the schedule reads). InvoiceSettled when the
    invoice is not open (paid, voided, or finance's ticket decides); ValueError for a date
    the rules refuse. The date it already has is no change. Returns as ``invoice_void``
    does; the update is keyed by the move (from -> to), so moving back is a move too. The
    ``reason`` (the renegotiation's) goes with the update into the journal and the audit."""
    if not isinstance(reason, str) or len(reason) > REASON_MAX:
        raise ValueError(f"a due-date change's reason is text of at most {REASON_MAX} characters")
    problem = due_at_problem(due_at)
    if problem:
        raise ValueError(problem)
    current = Invoice.objects.get(pk=invoice.pk)
    if current.status == InvoiceStatus.OPEN and current.due_at == due_at:
        return True
    moved = f"due:{invoice.pk}:{current.due_at.isoformat()}->{due_at.isoformat()}"
    return _update(
        invoice,
        "change_due_date",
        {"due_at": due_at.isoformat(), **({"reason": reason} if reason else {})},
        dedupe_key=moved,
        actor=actor,
        timeout=timeout,
        audit={**({"reason": reason} if reason else {}), **(audit or {})},
        refused=(InvoiceStatus.PAID, InvoiceStatus.VOIDED, InvoiceStatus.ESCALATED),
        without_run=None,
    )


def _update(
    invoice: Invoice,
    name: str,
    payload: dict,
    *,
    dedupe_key: str,
    actor: str,
    timeout: float | None,
    audit: dict | None,
    refused: tuple,
    without_run,
) -> bool:
    """Refuse at once what the row already settles (a read: ``refused`` statuses), then ask
    the run; a run that is gone (finished, archived) is asked nothing: ``without_run``
    decides, or InvoiceSettled."""
    current = Invoice.objects.get(pk=invoice.pk)
    if current.status in refused:
        raise InvoiceSettled(
            f"invoice {current.number} is already {current.status}", current.status
        )
    try:
        services.run_update(
            invoice.run_id,
            name,
            payload,
            actor=actor,
            dedupe_key=dedupe_key,
            timeout=rules.OPERATOR_WAIT_SECONDS if timeout is None else timeout,
            audit={"invoice": current.number, **(audit or {})},
        )
    except (UpdateRejected, UpdateFailed) as exc:
        status = Invoice.objects.values_list("status", flat=True).get(pk=invoice.pk)
        raise InvoiceSettled(
            f"invoice {current.number}: {getattr(exc, 'reason', '') or exc}", status
        ) from exc
    except UpdateTimeout:
        return False
    except (RunNotFound, RunFinished) as exc:
        if without_run is None:
            raise InvoiceSettled(
                f"invoice {current.number}: its reminders have ended ({exc})", "ended"
            ) from exc
        without_run()
    return True


def _void_directly(invoice: Invoice) -> None:
    """No run to tell (its reminders ended with a finance ticket): the row alone is voided."""
    with transaction.atomic():
        invoice = Invoice.objects.select_for_update().get(pk=invoice.pk)
        if invoice.status in (InvoiceStatus.PAID, InvoiceStatus.VOIDED):
            raise InvoiceSettled(
                f"invoice {invoice.number} is already {invoice.status}", invoice.status
            )
        invoice.status = InvoiceStatus.VOIDED
        invoice.save(update_fields=["status"])


def payment_event_receive(payload) -> tuple[PaymentEvent, bool]:
    """Record a provider event once (dedupe on its id); a payment marks the invoice paid and
    sends ``paid`` to its reminder run. Returns (event, created)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("id"), str) or not payload["id"]:
        raise PaymentPayloadInvalid("a payment event needs a string 'id'")
    if not is_verbatim(payload["id"]):  # nor rewritten: two ids must not become one
        raise PaymentPayloadInvalid("a payment event 'id' contains a NUL or a lone surrogate")
    if not isinstance(payload.get("type"), str):
        raise PaymentPayloadInvalid("a payment event needs a string 'type'")
    _refuse_overlong_fields(payload)
    try:
        payload = storable(payload)  # text any database and page can hold (U+FFFD for the rest)
    except TooDeep as exc:
        raise PaymentPayloadInvalid(f"a payment event is {exc}") from None
    data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
    try:
        with transaction.atomic():
            existing = PaymentEvent.objects.filter(event_id=payload["id"]).first()
            if existing is not None:
                return existing, False
            event = PaymentEvent(
                event_id=payload["id"], event_type=payload["type"], payload=payload
            )
            if payload["type"] not in PAID_EVENT_TYPES:
                event.status, event.note = PaymentEventStatus.IGNORED, "not a payment"
            else:
                invoice = (
                    Invoice.objects.select_for_update()
                    .filter(number=str(data.get("invoice", "")))
                    .first()
                )
                if invoice is None:
                    event.status = PaymentEventStatus.UNMATCHED
                    event.note = f"no invoice {data.get('invoice')!r}"
                else:
                    event.invoice, event.status = invoice, PaymentEventStatus.APPLIED
                    event.note = _apply_payment(invoice, event_id=event.event_id)
            event.note = _fitting(event.note, PaymentEvent._meta.get_field("note").max_length)
            event.save()
    except IntegrityError:  # a concurrent delivery of the same event won the race
        return PaymentEvent.objects.get(event_id=payload["id"]), False
    return event, True


def _refuse_overlong_fields(payload: dict) -> None:
    """Each field we store in a column, checked against it before anything is written (the
    payload's JSON column keeps anything)."""
    data = payload.get("data") if isinstance(payload.get("data"), dict) else {}
    for where, value, column in (
        ("id", payload["id"], PaymentEvent._meta.get_field("event_id")),
        ("type", payload["type"], PaymentEvent._meta.get_field("event_type")),
        ("data.invoice", str(data.get("invoice", "")), Invoice._meta.get_field("number")),
    ):
        if len(value) > column.max_length:
            raise PaymentFieldTooLong(where, len(value), column.max_length)


def _fitting(note: str, limit: int) -> str:
    """Our note about an event, cut to its column: it quotes the provider's fields, whose
    length we do not control (the event's payload keeps them whole)."""
    return note if len(note) <= limit else note[: limit - 1] + "…"


def _apply_payment(invoice: Invoice, *, event_id: str) -> str:
    if invoice.status != InvoiceStatus.PAID:
        invoice.status, invoice.paid_at = InvoiceStatus.PAID, clock.now()
        invoice.save(update_fields=["status", "paid_at"])
    try:
        services.signal_send(
            invoice.run_id,
            "paid",
            {"event_id": event_id},
            dedupe_key=event_id,
            actor="payments-webhook",
            audit={"event_id": event_id},
        )
    except (RunNotFound, RunFinished) as exc:
        log.info("payment %s for invoice %s: %s", event_id, invoice.number, exc)
        return f"invoice paid; reminders not signalled ({exc})"
    return f"paid -> {invoice.run_id}"
