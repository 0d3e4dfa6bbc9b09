"""Payment reconciliation (seed 002): bank vs ledger, one named step per correction.

No I/O here: this code runs again on every replay. The diff is pure and runs outside
a step; everything that touches the bank, the ledger or the clock is journaled.
"""

from durable import workflow
from processes.reconciliation import steps
from processes.reconciliation.clients import Line


@workflow(name="reconcile_correction", version=1)
def reconcile_correction(batch_date: str, line: Line) -> str:
    """One disputed entry: its own run, so an operator sees, retries or cancels it alone."""
    return workflow.step(
        steps.post_correction,
        batch_date,
        line,
        name=f"post_{line.id}",
        idempotency_key=workflow.id,
        atomic=True,
    )


@workflow(name="reconcile", version=1)
def reconcile(batch_date: str) -> dict:
    # Started by the durable schedule for each day (processes migration 0006), the run opens
    # its own batch; runs started before the schedule had theirs opened by the starter.
    if workflow.patched("opens-its-batch"):
        workflow.step(steps.open_batch, batch_date, atomic=True)
    statement = workflow.step(steps.fetch_bank_statement, batch_date)
    ledger = workflow.step(steps.fetch_ledger, batch_date)
    missing = steps.missing_entries(statement, ledger)
    if workflow.patched("corrections-as-children"):
        # One child run per missing entry, waited on together: the posting key is the child's
        # id, "<batch run>:post_<entry>", the key the steps below used before.
        workflow.wait_for_children(
            [
                workflow.start_child(
                    reconcile_correction, batch_date, line, id=f"{workflow.id}:post_{line.id}"
                )
                for line in missing
            ]
        )
    else:
        for line in missing:
            workflow.step(
                steps.post_correction,
                batch_date,
                line,
                name=f"post_{line.id}",
                idempotency_key=f"{workflow.id}:post_{line.id}",
                atomic=True,
            )
    closes_at = workflow.step(steps.closing_window, batch_date)
    now = workflow.now()
    if closes_at > now:
        workflow.sleep(closes_at - now)
    workflow.step(steps.mark_reconciled, batch_date, atomic=True)
    return {"batch": batch_date, "posted": [line.id for line in missing]}
