"""A worker that dies while the default queue holds a backlog: the sweep, on its own queue
and worker, still finds the run, and the takeover lane gets it advanced within lease + two
ticks, not after the thousands of advances queued before it.

The workers run with a 2 s lease and a 0.5 s tick (tests/faults/conftest.py). Before the
sweep had its own queue, its messages waited behind the backlog, expired after 5 s and were
thrown away, and a takeover waited for the whole backlog.
"""

import time
from datetime import timedelta

import pytest
from django.conf import settings

from durable import clock, services
from durable.models import RunStatus, WorkflowRun
from durable.runtime.store import live
from durable.tasks import send_advance
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

LEASE, TICK = 2.0, 0.5
SLACK = 1.0  # process start-up and a loaded 2-core machine
BACKLOG = 2400  # advances of 0.1 s steps: about two minutes of work for the two processes
needs_a_broker_server = pytest.mark.skipif(
    settings.CELERY_BROKER_URL.startswith("filesystem"),
    reason="what is measured is the broker's queues: Redis and RabbitMQ, as in production",
)


@needs_a_broker_server
def test_a_run_whose_worker_died_is_taken_over_within_lease_and_two_ticks_behind_a_backlog(
    celery_processes,
):
    celery = celery_processes
    backlog = [
        services.run_start("fault_backlog", n, id=f"backlog:{n}", actor="test").id
        for n in range(BACKLOG)
    ]
    # Only their messages make the backlog: the sweep leaves these runs alone meanwhile.
    WorkflowRun.objects.filter(pk__in=backlog).update(wake_at=clock.now() + timedelta(hours=1))
    for run_id in backlog:
        send_advance(run_id)  # what services.run_start sends, to the default queue
    celery.start_worker("w0", concurrency=2)
    celery.start_worker("sweep", concurrency=1, pool="solo", queues=[settings.DURABLE_SWEEP_QUEUE])
    celery.start_beat()
    wait_until(
        lambda: WorkflowRun.objects.filter(pk__in=backlog, status=RunStatus.COMPLETED).exists(),
        timeout=60,
        message="the workers to work through the backlog",
    )

    victim = services.run_start("fault_backlog", -1, id="backlog:victim", actor="test")
    _, dead = live.claim(victim.id, owner="a worker that dies", lease_seconds=LEASE)
    claimed_at = time.monotonic()
    wait_until(
        lambda: WorkflowRun.objects.get(pk=victim.id).fencing_token > dead.token,
        timeout=60,
        interval=0.02,
        message="another worker to take the run",
    )
    takeover_seconds = time.monotonic() - claimed_at
    still_queued = WorkflowRun.objects.filter(pk__in=backlog, status=RunStatus.PENDING).count()

    print(
        f"\n[faults] takeover behind a backlog of {still_queued} advances "
        f"({settings.CELERY_BROKER_URL.split(':')[0]}): {takeover_seconds:.2f} s after the claim "
        f"(lease {LEASE} s + two ticks = {LEASE + 2 * TICK} s)"
    )
    assert still_queued >= 2000, (
        "the backlog was worked off before the takeover: the test proved nothing"
    )
    assert takeover_seconds <= LEASE + 2 * TICK + SLACK
    wait_until(
        lambda: WorkflowRun.objects.get(pk=victim.id).status == RunStatus.COMPLETED,
        timeout=30,
        message="the taken-over run to complete",
    )
