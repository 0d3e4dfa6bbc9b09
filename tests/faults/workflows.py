"""The workflow every fault test runs: external effects, an effect on our own database,
a timer and a signal, with steps slow enough for a kill to land in the middle of one."""
import time

from celery import current_task

from durable import Retry, minutes, seconds, workflow
from tests.effects.models import Effect

# Infrastructure faults surface as step errors too (a terminated connection): be patient.
PATIENT = Retry(max_attempts=30, initial_interval=seconds(0.2), backoff=1.5, max_interval=seconds(2))


def worker_node() -> str:
    """The Celery node running this step ("" when driven in-process)."""
    request = current_task.request if current_task else None
    return getattr(request, "hostname", None) or ""


def charge(n: int, idempotency_key: str) -> str:
    """External: the payment provider dedupes by key, so it may run twice, never more."""
    Effect.objects.create(run_id=f"fault:{n}", name="charge", idempotency_key=idempotency_key,
                          worker=worker_node())
    time.sleep(0.1)
    return idempotency_key


def post_ledger(n: int, idempotency_key: str) -> int:
    """Ours: an atomic step, so the row commits with its journal entry, exactly once."""
    return Effect.objects.create(run_id=f"fault:{n}", name="ledger", idempotency_key=idempotency_key).pk


def notify(n: int, token: str, idempotency_key: str) -> str:
    time.sleep(0.15)
    Effect.objects.create(run_id=f"fault:{n}", name="notify", idempotency_key=idempotency_key,
                          worker=worker_node())
    return token


@workflow(name="fault_order")
def fault_order(n: int) -> dict:
    workflow.step(charge, n, idempotency_key=f"{workflow.id}:charge", retry=PATIENT)
    workflow.step(post_ledger, n, idempotency_key=f"{workflow.id}:ledger", atomic=True, retry=PATIENT)
    workflow.sleep(seconds(0.5 + (n % 4) * 0.25))
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    token = workflow.step(notify, n, go["token"], idempotency_key=f"{workflow.id}:notify", retry=PATIENT)
    return {"n": n, "token": token}
