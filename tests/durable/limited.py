"""Workflows and limits for the tests of queues and limits; also imported by worker subprocesses."""

import time

from celery import current_task

from durable import current_step, limit, seconds, workflow
from tests.effects.models import Effect

LLM_QUEUE = "test-llm"

SENDS = limit("test-sends", rate=20, per=seconds(1))
RATE_TWO = limit("test-rate-two", rate=2, per=seconds(1))
ONE_AT_A_TIME = limit("test-one", concurrency=1)
FOUR_AT_ONCE = limit("test-four", concurrency=4)
PER_KEY = limit("test-per-key", concurrency=1)


def mark(name: str) -> str:
    """Record that the step's body ran, when, and on which Celery worker."""
    info = current_step()
    worker = getattr(current_task.request, "hostname", "") if current_task else ""
    Effect.objects.create(
        run_id=info.run_id, name=name, idempotency_key=info.idempotency_key, worker=worker or ""
    )
    return name


def busy(seconds_: float) -> str:
    """A step that takes a while: its start and end are recorded, so a test sees overlaps."""
    mark("start")
    time.sleep(seconds_)
    mark("end")
    return "done"


def busy_the_first_time(seconds_: float) -> str:
    """Long on its first execution only (the one whose worker a test kills), short after."""
    first = not Effect.objects.filter(run_id=current_step().run_id, name="start").exists()
    return busy(seconds_ if first else 0)


@workflow(name="limited_send")
def limited_send(n: int) -> str:
    return workflow.step(mark, "send", limit="test-sends")


@workflow(name="rate_two")
def rate_two(n: int) -> str:
    return workflow.step(mark, "send", limit="test-rate-two")


@workflow(name="one_at_a_time")
def one_at_a_time(n: int) -> str:
    return workflow.step(busy, 0, limit="test-one")


@workflow(name="hog_the_slot")
def hog_the_slot(n: int) -> str:
    return workflow.step(busy_the_first_time, 60, limit="test-one")


@workflow(name="four_at_once")
def four_at_once(n: int) -> str:
    return workflow.step(busy, 0.3, limit="test-four")


@workflow(name="per_key")
def per_key(key: str, n: int) -> str:
    return workflow.step(busy, 0.3, limit=("test-per-key", key))


@workflow(name="undeclared_limit")
def undeclared_limit() -> str:
    return workflow.step(mark, "send", limit="nobody-declared-this")


@workflow(name="llm_in_the_middle")
def llm_in_the_middle() -> list:
    before = workflow.step(mark, "before")
    checked = workflow.step(mark, "checked", queue=LLM_QUEUE)
    after = workflow.step(mark, "after")
    return [before, checked, after]


@workflow(name="all_on_llm", queue=LLM_QUEUE)
def all_on_llm() -> str:
    return workflow.step(mark, "checked")


@workflow(name="send_now")
def send_now(n: int) -> str:
    return workflow.step(mark, "send")


@workflow(name="slow_llm_check")
def slow_llm_check() -> str:
    return workflow.step(busy, 12, queue=LLM_QUEUE)


PRIORITY_QUEUE = "test-priority-check"  # declared with x-max-priority by its own test


@workflow(name="served_by_priority", queue=PRIORITY_QUEUE)
def served_by_priority(n: int) -> str:
    return workflow.step(mark, f"served-{n}")
