"""Priorities, 0..9, higher first: in the sweep's pick, in a limit's line (first come, first
served within one priority), and in the message the broker carries."""

from datetime import timedelta

import pytest

from durable import services, tasks, testing, workflow
from durable.models import LimitTicket, WorkflowRun
from durable.runtime.priorities import broker_priority
from durable.runtime.store import live
from durable.runtime.sweep import sweep_due
from durable.testing import drive
from tests.durable.limited import ONE_AT_A_TIME, mark
from tests.durable.test_api import client_for, post_json, user_with
from tests.durable.test_cli import durable

pytestmark = pytest.mark.django_db


@workflow(name="urgent_slot")
def urgent_slot(n: int) -> str:
    return workflow.step(mark, "urgent", limit="test-one", priority=9)


def waiting_at_the_limit(n: int, *, priority: int = 5, workflow_name: str = "one_at_a_time") -> str:
    """A run claimed by a worker whose step asks for ONE_AT_A_TIME; returns its id."""
    run = services.run_start(
        workflow_name, n, id=f"{workflow_name}:{n}", actor="test", priority=priority
    )
    drive(run.id, owner=f"worker-{n}")
    return run.id


def test_a_run_starts_with_its_priority_and_its_message_carries_it(
    clock, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start("three_steps", 1, id="prio:start", actor="test", priority=8)

    assert WorkflowRun.objects.get(pk=run.id).priority == 8
    assert testing.dispatch_priorities[run.id] == 8


def test_a_signals_wake_up_goes_at_its_runs_priority(clock, django_capture_on_commit_callbacks):
    run = drive(services.run_start("step_wait_step", id="prio:signal", actor="test", priority=8).id)
    testing.dispatch_priorities.clear()

    with django_capture_on_commit_callbacks(execute=True):
        services.signal_send(run.id, "go", {"value": 1}, actor="test")

    assert testing.dispatch_priorities[run.id] == 8


def test_a_child_starts_at_its_parents_priority(clock, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        parent = services.run_start("one_child", "e1", id="prio:parent", actor="test", priority=7)
    with django_capture_on_commit_callbacks(execute=True):
        drive(parent.id)

    child = WorkflowRun.objects.get(parent_id=parent.id)
    assert child.priority == 7
    assert testing.dispatch_priorities[child.id] == 7


@pytest.mark.parametrize("priority", [-1, 10, "9", 2.0, True])
def test_a_priority_that_is_not_a_whole_number_from_0_to_9_starts_nothing(clock, priority):
    with pytest.raises(ValueError, match="from 0 to 9"):
        services.run_start("three_steps", 1, id="prio:bad", actor="test", priority=priority)

    assert not WorkflowRun.objects.exists()


def test_the_sweep_picks_higher_priorities_first_and_the_soonest_within_one(
    clock, django_capture_on_commit_callbacks
):
    for name, priority, due_in in [
        ("low", 1, 1),
        ("high-late", 9, 3),
        ("high-soon", 9, 2),
        ("mid", 5, 0),
    ]:
        services.run_start("three_steps", 1, id=name, actor="test", priority=priority)
        WorkflowRun.objects.filter(pk=name).update(wake_at=clock.now() + timedelta(seconds=due_in))
    clock.advance(timedelta(seconds=5))

    with django_capture_on_commit_callbacks(execute=True):
        picked = sweep_due(limit=3)

    assert picked == ["high-soon", "high-late", "mid"]
    assert testing.dispatch_priorities["high-soon"] == 9


def test_a_freed_slot_goes_to_the_highest_priority_waiter_first_come_within_one(
    clock, django_capture_on_commit_callbacks
):
    holder = services.run_start("hog_the_slot", 1, id="holder", actor="test")
    _, lease = live.claim(holder.id, owner="holder-worker")
    assert lease.acquire_limit(ONE_AT_A_TIME, "", 0, "celery") is None
    early = waiting_at_the_limit(2, priority=5)
    urgent = waiting_at_the_limit(3, priority=9)
    also_urgent = waiting_at_the_limit(4, priority=9)

    testing.dispatched.clear()
    with django_capture_on_commit_callbacks(execute=True):
        lease.release_limit(ONE_AT_A_TIME, "", 0)

    assert testing.dispatched == [urgent]
    line = list(
        LimitTicket.objects.filter(state="waiting")
        .order_by("-priority", "queued_at", "id")
        .values_list("run_id", flat=True)
    )
    assert line == [urgent, also_urgent, early]


def test_a_step_of_its_own_priority_takes_that_place_in_the_line(clock):
    holder = services.run_start("hog_the_slot", 1, id="holder", actor="test")
    _, lease = live.claim(holder.id, owner="holder-worker")
    lease.acquire_limit(ONE_AT_A_TIME, "", 0, "celery")

    run_id = waiting_at_the_limit(2, workflow_name="urgent_slot")

    assert LimitTicket.objects.get(run_id=run_id).priority == 9


@pytest.mark.parametrize(
    ("priority", "url", "expected"),
    [
        (7, "amqp://guest:guest@127.0.0.1:5672//", 7),
        (7, "redis://127.0.0.1:6379/0", None),  # as every message sent without one: first there
        (5, "redis://127.0.0.1:6379/0", None),
        (2, "redis://127.0.0.1:6379/0", 7),  # behind them
        (7, "filesystem://localhost/", None),
    ],
)
def test_the_broker_hears_the_priority_as_it_reads_one(priority, url, expected):
    assert broker_priority(priority, url) == expected


def test_a_takeover_goes_on_the_lane_without_a_priority(clock, django_capture_on_commit_callbacks):
    services.run_start("three_steps", 1, id="prio:takeover", actor="test", priority=2)
    live.claim("prio:takeover", owner="a worker that dies", lease_seconds=1)
    clock.advance(timedelta(seconds=5))

    with django_capture_on_commit_callbacks(execute=True):
        sweep_due()

    assert testing.dispatch_queues["prio:takeover"] == "durable-takeover"
    assert testing.dispatch_priorities["prio:takeover"] is None


def test_an_advance_message_carries_the_brokers_priority(monkeypatch, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:6379/0"
    sent = []
    monkeypatch.setattr(
        tasks.advance, "apply_async", lambda args, kwargs, **options: sent.append(options)
    )

    tasks.send_advance("run-1", priority=1)

    assert sent == [{"countdown": None, "retry": False, "priority": 8}]


def test_the_api_starts_a_run_with_a_priority_and_shows_it(clock):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    started = post_json(
        operator,
        "/api/runs/",
        {"workflow": "three_steps", "args": [1], "id": "prio:api", "priority": 9},
    )
    refused = post_json(
        operator, "/api/runs/", {"workflow": "three_steps", "args": [1], "priority": 10}
    )

    assert (started.status_code, started.json()["priority"]) == (201, 9)
    assert refused.status_code == 400 and "priority" in refused.json()["error"]["detail"]


def test_the_command_starts_a_run_with_a_priority(clock):
    durable("start", "three_steps", "1", "--id", "prio:cli", "--priority", "2")

    assert WorkflowRun.objects.get(pk="prio:cli").priority == 2
