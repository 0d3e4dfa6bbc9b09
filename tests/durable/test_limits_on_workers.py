"""Queues and limits on real Celery workers: counts hold across processes, a killed holder frees its
slot."""

import time
from datetime import timedelta

import pytest
from django.db import transaction

from durable import services
from durable.models import JournalEntry, RunStatus, WorkflowRun
from tests.durable.limited import LLM_QUEUE
from tests.durable.test_celery_workers import status_of
from tests.effects.models import Effect
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def completed(prefix: str) -> int:
    return WorkflowRun.objects.filter(pk__startswith=prefix, status=RunStatus.COMPLETED).count()


def start_many(workflow_name: str, count: int, prefix: str, *args) -> list[str]:
    with transaction.atomic():
        return [
            services.run_start(workflow_name, *args, n, id=f"{prefix}{n}", actor="test").id
            for n in range(count)
        ]


def busiest_window(times: list, width: timedelta) -> int:
    """The most timestamps in any window [t, t + width) that starts at one of them."""
    times = sorted(times)
    most, first = 0, 0
    for last, at in enumerate(times):
        while times[first] <= at - width:
            first += 1
        most = max(most, last - first + 1)
    return most


def intervals(run_prefix: str) -> list[tuple]:
    """(start, end, run id) of every busy step, paired by the step's idempotency key."""
    marks = {}
    for name, key, at, run_id in Effect.objects.filter(run_id__startswith=run_prefix).values_list(
        "name", "idempotency_key", "created_at", "run_id"
    ):
        marks.setdefault(key, {"run": run_id})[name] = at
    return [(m["start"], m["end"], m["run"]) for m in marks.values() if "start" in m and "end" in m]


def most_at_once(spans: list[tuple]) -> int:
    events = sorted([(start, 1) for start, _, _ in spans] + [(end, -1) for _, end, _ in spans])
    running = most = 0
    for _, change in events:  # an end sorts before a start at the same instant
        running += change
        most = max(most, running)
    return most


def test_two_hundred_runs_on_three_workers_never_send_more_than_twenty_in_any_second(celery):
    for name in ("one", "two", "three"):
        celery.start_worker(name)
    celery.start_beat()
    began = time.monotonic()

    start_many("limited_send", 200, "send:")
    wait_until(lambda: completed("send:") == 200, timeout=300, interval=0.5, message="200 sends")

    sends = list(Effect.objects.filter(name="send").values_list("created_at", flat=True))
    busiest = busiest_window(sends, timedelta(seconds=1))
    print(f"200 sends in {time.monotonic() - began:.1f}s; busiest 1-second window: {busiest}")
    assert len(sends) == 200
    assert busiest <= 20
    assert not JournalEntry.objects.filter(run__id__startswith="send:").exclude(attempt=1).exists()


def test_four_steps_at_most_ever_run_at_once_under_a_concurrency_of_four(celery):
    for name in ("one", "two", "three"):
        celery.start_worker(name)
    celery.start_beat()

    start_many("four_at_once", 24, "four:")
    wait_until(lambda: completed("four:") == 24, timeout=180, interval=0.5, message="24 runs")

    spans = intervals("four:")
    print(f"most busy steps at once: {most_at_once(spans)} (limit 4, 6 worker processes)")
    assert len(spans) == 24
    assert most_at_once(spans) <= 4


def test_a_key_with_concurrency_one_runs_one_step_at_a_time_while_other_keys_proceed(celery):
    for name in ("one", "two"):
        celery.start_worker(name)
    celery.start_beat()

    start_many("per_key", 6, "key:acme:", "acme")
    start_many("per_key", 6, "key:globex:", "globex")
    wait_until(lambda: completed("key:") == 12, timeout=180, interval=0.5, message="12 runs")

    acme, globex = intervals("key:acme:"), intervals("key:globex:")
    assert (len(acme), len(globex)) == (6, 6)
    assert most_at_once(acme) == 1 and most_at_once(globex) == 1
    assert most_at_once(acme + globex) == 2


def test_a_killed_worker_holding_the_only_slot_does_not_keep_it(celery):
    celery.start_worker("doomed")
    celery.start_beat()
    hog = services.run_start("hog_the_slot", 1, id="hog:1", actor="test")
    wait_until(
        lambda: Effect.objects.filter(run_id=hog.id, name="start").exists(),
        timeout=60,
        message="the hog to take the slot",
    )
    queued = services.run_start("one_at_a_time", 1, id="queued:1", actor="test")
    wait_until(
        lambda: WorkflowRun.objects.filter(pk=queued.id, waiting_for="limit:test-one").exists(),
        timeout=30,
        message="the second run to wait for the slot",
    )

    celery.kill("doomed")
    killed_at = time.monotonic()
    celery.start_worker("replacement")
    wait_until(
        lambda: status_of(queued.id) == RunStatus.COMPLETED, timeout=60, message="the waiter"
    )
    waited = time.monotonic() - killed_at
    wait_until(
        lambda: status_of(hog.id) == RunStatus.COMPLETED, timeout=60, message="the hog, retaken"
    )

    print(f"the waiter completed {waited:.1f}s after its slot's holder was killed (2 s lease)")
    assert Effect.objects.filter(run_id=queued.id, name="end").count() == 1


def test_a_busy_llm_worker_does_not_delay_sends_on_the_default_queue(celery):
    celery.start_worker("default", concurrency=2)
    celery.start_worker("llm", concurrency=1, queues=[LLM_QUEUE])
    celery.start_beat()
    check = services.run_start("slow_llm_check", id="llm:1", actor="test")
    wait_until(
        lambda: Effect.objects.filter(run_id=check.id, name="start").exists(),
        timeout=60,
        message="the llm worker to start the check",
    )
    started = time.monotonic()

    start_many("send_now", 20, "now:")
    wait_until(lambda: completed("now:") == 20, timeout=60, message="20 sends")
    sent_in = time.monotonic() - started

    assert not Effect.objects.filter(run_id=check.id, name="end").exists()  # the check still runs
    wait_until(lambda: status_of(check.id) == RunStatus.COMPLETED, timeout=60, message="the check")
    workers = dict(
        Effect.objects.filter(name__in=["start", "send"]).values_list("name", "worker").distinct()
    )
    print(f"20 sends completed in {sent_in:.1f}s while the llm worker was busy for 12 s")
    assert workers["start"].startswith("llm-") and workers["send"].startswith("default-")
