"""Payment reconciliation (seed 002): bank vs ledger, one named step per correction.

No I/O here: this code runs again on every replay. The diff is pure and runs outside
a step; everything that touches the bank, the ledger or the clock is journaled.
"""
from durable import workflow
from processes.reconciliation import steps


@workflow(name="reconcile", version=1)
def reconcile(batch_date: str) -> dict:
    # Started by the durable schedule for each day (processes migration 0006), the run opens
    # its own batch; runs started before the schedule had theirs opened by the starter.
    if workflow.patched("opens-its-batch"):
        workflow.step(steps.open_batch, batch_date, atomic=True)
    statement = workflow.step(steps.fetch_bank_statement, batch_date)
    ledger = workflow.step(steps.fetch_ledger, batch_date)
    missing = steps.missing_entries(statement, ledger)
    for line in missing:
        workflow.step(steps.post_correction, batch_date, line, name=f"post_{line.id}",
                      idempotency_key=f"{workflow.id}:post_{line.id}", atomic=True)
    closes_at = workflow.step(steps.closing_window, batch_date)
    now = workflow.now()
    if closes_at > now:
        workflow.sleep(closes_at - now)
    workflow.step(steps.mark_reconciled, batch_date, atomic=True)
    return {"batch": batch_date, "posted": [line.id for line in missing]}
