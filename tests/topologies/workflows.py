"""The workflows the topology tests run; also imported by worker subprocesses.

``failover_order``: every effect is a row in our own database, written by an atomic step,
and each commit the database acknowledged leaves a mark outside it. ``topology_order``: a
timer, a signal and a step under a limit of one at a time (the limit's line takes an
advisory lock), for PgBouncer."""

import os
import time
from pathlib import Path

from django.db import transaction

from durable import Retry, current_step, limit, minutes, seconds, workflow
from tests.effects.models import Effect

# A failover fails steps until the standby is promoted: be patient.
PATIENT = Retry(
    max_attempts=60, initial_interval=seconds(0.2), backoff=1.5, max_interval=seconds(2)
)
STEPS = ("reserve", "charge", "ship")


def acknowledged(run_id: str, name: str) -> None:
    """A file per commit the database acknowledged (outside it, so a failover keeps it):
    two for one step mean a commit was acknowledged, lost, and the step run again."""
    folder = Path(os.environ["FAILOVER_MARKS"])
    mark = folder / f"{run_id.replace(':', '-')}.{name}.{os.getpid()}.{time.monotonic_ns()}"
    transaction.on_commit(mark.touch)


def record(run_id: str, name: str) -> int:
    """Ours, atomic: the row commits with the step's journal entry, or neither does."""
    acknowledged(run_id, name)
    time.sleep(0.15)
    return Effect.objects.create(run_id=run_id, name=name, idempotency_key=f"{run_id}:{name}").pk


@workflow(name="failover_order")
def failover_order(n: int) -> dict:
    run_id = workflow.id
    workflow.step(record, run_id, "reserve", name="reserve", atomic=True, retry=PATIENT)
    workflow.step(record, run_id, "charge", name="charge", atomic=True, retry=PATIENT)
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    workflow.sleep(seconds(0.5))
    workflow.step(record, run_id, "ship", name="ship", atomic=True, retry=PATIENT)
    return {"n": n, "token": go["token"]}


ONE_AT_A_TIME = limit("topology-one", concurrency=1)


def deliver(token: str) -> str:
    """Records its start and end, so that a test sees whether two ever overlapped."""
    info = current_step()
    Effect.objects.create(run_id=info.run_id, name="start", idempotency_key=info.idempotency_key)
    time.sleep(0.2)
    Effect.objects.create(run_id=info.run_id, name="end", idempotency_key=info.idempotency_key)
    return token


@workflow(name="topology_order")
def topology_order(n: int) -> dict:
    workflow.sleep(seconds(0.5))
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    delivered = workflow.step(deliver, go["token"], limit="topology-one")
    return {"n": n, "delivered": delivered}
