"""Billing reminders (the seed's `cobranca`): remind, wait for `paid`, remind, wait, ticket;
an invoice can be voided or given a new due date while reminders are pending.

Void and due-date change are updates (``workflow.on_update``): the operator's call is
accepted or refused at once, with a reason. The handler decides under the invoice row's
lock (a payment that landed a moment ago wins) and, accepted, hands the body the signal its
wait takes (``voided``, ``due_date_changed``), in the step's own transaction.

No I/O here: this code runs again on every replay.
"""

from datetime import datetime

from durable import UpdateRejected, days, workflow
from processes.billing import steps
from processes.billing.models import InvoiceStatus
from processes.whatsapp.limits import SEND

PAYMENT_WAIT = days(3)
# A reminder is sent once the invoice is overdue: it goes ahead of greetings and asks in the
# WhatsApp sending line (a step's priority changes no journal: old runs replay the same).
OVERDUE_PRIORITY = 7
EVENTS = ["paid", "voided", "due_date_changed"]
# Change id (docs/versioning.md): waits take `voided` and `due_date_changed` beside `paid`.
# Runs recorded before it keep waiting for `paid` alone.
VOID_AND_RENEGOTIATE = "void-and-renegotiate"


OLD_PATH_REFUSAL = (
    "this invoice's reminders started before void and renegotiation existed: "
    "they wait for a payment only"
)


@workflow(name="billing", version=1)
def billing(invoice_id: int) -> str:
    # Registered before any durable call; they take no journal position, so no recorded run
    # replays differently. A run on the old path (no waits for `voided` or
    # `due_date_changed`) refuses them: it could not act on them.
    path = {"old": False}

    def open_path(check):
        def validator(payload):
            if path["old"]:
                raise UpdateRejected(OLD_PATH_REFUSAL)
            check(payload)

        return validator

    workflow.on_update(
        "void", lambda payload: void(invoice_id, payload), validator=open_path(check_void)
    )
    workflow.on_update(
        "change_due_date",
        lambda payload: change_due_date(invoice_id, payload),
        validator=open_path(check_due_date),
    )
    due_at = workflow.step(steps.invoice_due_at, invoice_id)
    if not workflow.patched(VOID_AND_RENEGOTIATE):
        path["old"] = True
        return remind_until_paid(invoice_id, due_at)
    schedule = 0
    while True:
        outcome = remind_until_settled(invoice_id, due_at, schedule)
        if isinstance(outcome, str):
            return outcome
        due_at, schedule = outcome, schedule + 1  # a new due date: the schedule starts again


def remind_until_settled(invoice_id: int, due_at, schedule: int):
    """One schedule from ``due_at``: the result ("paid", "voided", "escalated"), or the new
    due date when the invoice was renegotiated. Reminder keys ``<run id>:<n>`` for the first
    schedule, ``<run id>:due<schedule>:<n>`` after a new due date."""
    prefix = f"{workflow.id}:" if schedule == 0 else f"{workflow.id}:due{schedule}:"
    now = workflow.now()
    if due_at > now:
        settled = settle(invoice_id, workflow.wait_for_any(EVENTS, timeout=due_at - now))
        if settled is not None:
            return settled
    for number in (1, 2):
        sent = workflow.step(
            steps.send_reminder,
            invoice_id,
            number,
            idempotency_key=f"{prefix}{number}",
            limit=SEND,
            priority=OVERDUE_PRIORITY,
        )
        if sent.startswith(steps.NOT_SENT):  # settled outside the run: end as the row says
            return sent.removeprefix(steps.NOT_SENT)
        settled = settle(invoice_id, workflow.wait_for_any(EVENTS, timeout=PAYMENT_WAIT))
        if settled is not None:
            return settled
    workflow.step(steps.open_finance_ticket, invoice_id, idempotency_key=workflow.id, atomic=True)
    return "escalated"


def settle(invoice_id: int, got):
    """What a received event means: None (the deadline passed), a result, or a new due date.
    A void is checked against the invoice row under its lock: a payment wins over it."""
    if got is None:
        return None
    if got.name == "paid":
        return "paid"
    if got.name == "voided":
        return workflow.step(steps.invoice_void_settle, invoice_id, atomic=True)
    return workflow.step(steps.invoice_due_at, invoice_id)


def remind_until_paid(invoice_id: int, due_at) -> str:
    """The path of runs recorded before VOID_AND_RENEGOTIATE."""
    now = workflow.now()
    if due_at > now and workflow.wait_for_signal("paid", timeout=due_at - now) is not None:
        return "paid"  # paid before it was due: no reminder at all
    for number in (1, 2):
        workflow.step(
            steps.send_reminder,
            invoice_id,
            number,
            idempotency_key=f"{workflow.id}:{number}",
            limit=SEND,
            priority=OVERDUE_PRIORITY,
        )
        if workflow.wait_for_signal("paid", timeout=PAYMENT_WAIT) is not None:
            return "paid"
    workflow.step(steps.open_finance_ticket, invoice_id, idempotency_key=workflow.id, atomic=True)
    return "escalated"


# --- updates: refused at once on their payload, decided under the invoice's lock ---


def check_void(payload) -> None:
    if payload is not None and not isinstance(payload, dict):
        raise UpdateRejected('a void takes {"reason": "..."} or nothing')
    reason = (payload or {}).get("reason", "")
    if not isinstance(reason, str) or len(reason) > 500:
        raise UpdateRejected("a void's reason is text of at most 500 characters")


def void(invoice_id: int, payload) -> dict:
    status = workflow.step(
        steps.invoice_void_apply, invoice_id, (payload or {}).get("reason", ""), atomic=True
    )
    if status != "voided":
        raise UpdateRejected(f"the invoice is {status}")
    return {"status": "voided"}


def check_due_date(payload) -> None:
    due_at = payload.get("due_at") if isinstance(payload, dict) else None
    try:
        parsed = datetime.fromisoformat(due_at) if isinstance(due_at, str) else None
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise UpdateRejected(
            'a new due date is needed: {"due_at": "<ISO 8601 date and time with its offset>"}'
        )


def change_due_date(invoice_id: int, payload) -> dict:
    outcome = workflow.step(
        steps.invoice_due_date_apply, invoice_id, payload["due_at"], atomic=True
    )
    if outcome in InvoiceStatus.values:
        raise UpdateRejected(f"the invoice is {outcome}: its due date stays")
    if outcome not in ("changed", "unchanged"):
        raise UpdateRejected(outcome)  # the date's problem
    return {"due_at": payload["due_at"]}
