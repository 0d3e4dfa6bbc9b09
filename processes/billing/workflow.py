"""Billing reminders (the seed's `cobranca`): remind, wait for `paid`, remind, wait, ticket.

No I/O here: this code runs again on every replay.
"""
from durable import days, workflow
from processes.billing import steps

PAYMENT_WAIT = days(3)


@workflow(name="billing", version=1)
def billing(invoice_id: int) -> str:
    due_at = workflow.step(steps.invoice_due_at, invoice_id)
    now = workflow.now()
    if due_at > now and workflow.wait_for_signal("paid", timeout=due_at - now) is not None:
        return "paid"  # paid before it was due: no reminder at all
    for number in (1, 2):
        workflow.step(steps.send_reminder, invoice_id, number, idempotency_key=f"{workflow.id}:{number}")
        if workflow.wait_for_signal("paid", timeout=PAYMENT_WAIT) is not None:
            return "paid"
    workflow.step(steps.open_finance_ticket, invoice_id, idempotency_key=workflow.id, atomic=True)
    return "escalated"
