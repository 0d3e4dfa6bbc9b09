"""The workflow the topology tests run through each topology: a timer, a signal and a step
under a limit of one at a time (the limit's line takes an advisory lock); also imported by
worker subprocesses."""

import time

from durable import current_step, limit, minutes, seconds, workflow
from tests.effects.models import Effect

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
