"""Runs executed by real Celery worker and beat subprocesses, with kills and lost messages."""

import subprocess
import sys
import time

import pytest
import redis
from django.conf import settings
from django.db import transaction

from durable import services
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun
from tests.durable.workflows import three_steps
from tests.effects.models import Effect
from tests.support import ROOT, subprocess_env
from tests.workers import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
]

from tests.durable.conftest import LEASE_SECONDS  # noqa: E402

USES_REDIS = settings.CELERY_BROKER_URL.startswith("redis")


def status_of(run_id: str) -> str:
    return WorkflowRun.objects.filter(pk=run_id).values_list("status", flat=True).first()


def test_fifty_runs_of_three_steps_all_complete(celery):
    celery.start_worker()
    with transaction.atomic():
        for n in range(50):
            services.run_start(three_steps, n, id=f"fifty:{n}", actor="test")

    wait_until(
        lambda: WorkflowRun.objects.filter(status=RunStatus.COMPLETED).count() == 50,
        timeout=90,
        message="50 completed runs",
    )

    assert sorted(WorkflowRun.objects.values_list("result", flat=True)) == list(range(3, 53))
    assert Effect.objects.filter(name="add_one").count() == 150


def test_a_worker_killed_during_a_long_step_is_replaced_and_no_step_before_repeats(celery):
    celery.env["SLOW_STEP_SECONDS"] = "60"
    celery.start_worker("doomed")
    celery.start_beat()
    run = services.run_start("killed_mid_step", id="kill:1", actor="test")
    wait_until(
        lambda: Effect.objects.filter(run_id=run.id, name="slow_effect").exists(),
        timeout=60,
        message="the slow step to start",
    )

    celery.kill("doomed")
    killed_at = time.monotonic()
    celery.start_worker("replacement")
    wait_until(
        lambda: status_of(run.id) == RunStatus.COMPLETED, timeout=60, message="the run to complete"
    )
    resumed_after = time.monotonic() - killed_at

    effects = list(
        Effect.objects.filter(run_id=run.id).order_by("id").values_list("name", "idempotency_key")
    )
    assert [name for name, _ in effects] == ["first", "slow_effect", "slow_effect", "last"]
    assert effects[1][1] == effects[2][1]
    print(f"resumed {resumed_after:.1f}s after SIGKILL with a {LEASE_SECONDS}s lease")


@pytest.mark.skipif(not USES_REDIS, reason="flushes the Redis broker")
def test_the_sweep_recovers_every_run_after_redis_is_flushed(celery):
    pending = [
        services.run_start(three_steps, n, id=f"flushed:{n}", actor="test").id for n in range(5)
    ]
    waiting = services.run_start("step_wait_step", id="flushed:waiting", actor="test").id
    celery.start_worker()
    wait_until(lambda: status_of(waiting) == RunStatus.WAITING, timeout=30, message="the wait")
    celery.stop()
    pending += [
        services.run_start(three_steps, n, id=f"flushed:late:{n}", actor="test").id
        for n in range(5)
    ]
    services.signal_send(waiting, "go", {"value": 1}, actor="test")

    redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    celery.start_worker()
    celery.start_beat()

    wait_until(
        lambda: all(status_of(r) == RunStatus.COMPLETED for r in [*pending, waiting]),
        timeout=60,
        message="every run to complete after the flush",
    )
    assert WorkflowRun.objects.get(pk=waiting).result == ["before", 1, "after"]


def test_a_sleep_fires_through_beat_within_two_seconds_of_its_deadline(celery):
    celery.start_worker()
    celery.start_beat()
    run = services.run_start("short_nap", id="nap:beat", actor="test")

    wait_until(
        lambda: status_of(run.id) == RunStatus.COMPLETED, timeout=30, message="the nap to end"
    )

    sleep = JournalEntry.objects.get(run_id=run.id, kind=EntryKind.SLEEP)
    woke = JournalEntry.objects.get(run_id=run.id, kind=EntryKind.STEP)
    lateness = (woke.created_at - sleep.wake_at).total_seconds()
    assert 0 <= lateness <= 2, f"the timer fired {lateness:.2f}s after its deadline"


def test_a_signal_resumes_a_waiting_run_while_the_worker_runs(celery):
    celery.start_worker()
    run = services.run_start("step_wait_step", id="signal:live", actor="test")
    wait_until(lambda: status_of(run.id) == RunStatus.WAITING, timeout=30, message="the wait")

    services.signal_send(run.id, "go", {"value": 42}, actor="test")

    wait_until(lambda: status_of(run.id) == RunStatus.COMPLETED, timeout=30, message="the resume")
    assert WorkflowRun.objects.get(pk=run.id).result == ["before", 42, "after"]


def test_two_executors_racing_on_one_run_leave_one_journal_entry(tmp_path):
    """Executor A's lease expires mid-step (no heartbeat); B takes over; A's write is refused."""
    run = services.run_start("one_slow_step", 3.0, id="race:1", actor="test")
    env = subprocess_env(DURABLE_LEASE_SECONDS="1", DURABLE_HEARTBEAT="0")
    code = (
        "import django, sys; django.setup(); from durable.runtime.executor import advance; "
        "print(advance('race:1', owner=sys.argv[1]))"
    )
    first = subprocess.Popen(
        [sys.executable, "-c", code, "A"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    wait_until(
        lambda: Effect.objects.filter(run_id=run.id).exists(), timeout=30, message="A's step"
    )
    time.sleep(1.2)
    second = subprocess.Popen(
        [sys.executable, "-c", code, "B"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )

    outcomes = {first.communicate(timeout=60)[0].strip(), second.communicate(timeout=60)[0].strip()}

    assert outcomes == {"fenced", "completed"}
    assert JournalEntry.objects.filter(run_id=run.id).count() == 1
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.COMPLETED
    assert Effect.objects.filter(run_id=run.id).count() == 2  # at least once, recorded once
