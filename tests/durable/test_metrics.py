"""/metrics: the engine's state read from the database at scrape time, behind staff or a token;
and log records stamped with the run id and position."""

import logging
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from prometheus_client.parser import text_string_to_metric_families

from durable import services, workflow
from durable.models import WorkflowRun
from durable.runtime import sweep
from durable.runtime.logging import RunContextFilter
from durable.testing import drive, override_workflow

pytestmark = pytest.mark.django_db

TOKEN = "scrape-secret-for-tests"


@pytest.fixture
def scrape(client, settings):
    settings.DURABLE_METRICS_TOKEN = TOKEN

    def get() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return get


def test_metrics_need_a_token_or_a_staff_login(client, settings):
    settings.DURABLE_METRICS_TOKEN = TOKEN
    clerk = User.objects.create_user("clerk", password="pw-unused-123")
    admin = User.objects.create_user("admin", password="pw-unused-123", is_staff=True)

    anonymous = client.get("/metrics")
    wrong_token = client.get("/metrics", HTTP_AUTHORIZATION="Bearer guess")
    client.force_login(clerk)
    not_staff = client.get("/metrics")
    client.force_login(admin)
    staff = client.get("/metrics")

    assert (anonymous.status_code, wrong_token.status_code, not_staff.status_code) == (
        401,
        401,
        403,
    )
    assert staff.status_code == 200 and b"durable_runs" in staff.content


def test_an_empty_token_setting_never_matches(client, settings):
    settings.DURABLE_METRICS_TOKEN = ""

    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 401


def test_runs_are_counted_by_workflow_and_status(scrape, clock):
    drive(services.run_start("step_wait_step", id="w:1", actor="test").id)
    drive(services.run_start("step_wait_step", id="w:2", actor="test").id)
    services.run_start("three_steps", 1, id="t:1", actor="test")

    metrics = scrape()

    assert metrics[("durable_runs", (("status", "waiting"), ("workflow", "step_wait_step")))] == 2
    assert metrics[("durable_runs", (("status", "pending"), ("workflow", "three_steps")))] == 1
    assert metrics[("durable_runs", (("status", "completed"), ("workflow", "three_steps")))] == 0


def test_steps_retries_advances_and_signals_are_counted(scrape, clock):
    run = drive(
        services.run_start("gives_up", id="g:1", actor="test").id
    )  # attempt 1 fails, backs off
    for _ in range(2):
        clock.advance(timedelta(minutes=5))
        run = drive(run.id)  # attempts 2 and 3
    waiting = drive(services.run_start("step_wait_step", id="w:1", actor="test").id)
    services.signal_send(waiting.id, "go", {"value": 1}, dedupe_key="k", actor="test")
    services.signal_send(
        waiting.id, "go", {"value": 1}, dedupe_key="k", actor="test"
    )  # a redelivery

    metrics = scrape()

    assert run.status == "completed"
    assert metrics[("durable_steps_executed_total", (("workflow", "gives_up"),))] == 3
    assert metrics[("durable_step_retries_total", (("workflow", "gives_up"),))] == 2
    advances = WorkflowRun.objects.get(pk="g:1").advances
    assert (
        advances >= 3
        and metrics[("durable_advances_total", (("workflow", "gives_up"),))] == advances
    )
    assert metrics[("durable_signals_received_total", (("workflow", "step_wait_step"),))] == 1
    assert metrics[("durable_signals_pending", ())] == 1


def a_then_b():
    workflow.step(lambda: "a", name="a")
    workflow.wait_for_signal("go")


def b_then_a():
    workflow.step(lambda: "b", name="b")
    workflow.wait_for_signal("go")


def test_blocked_runs_are_a_gauge_of_their_own(scrape, clock):
    with override_workflow(a_then_b, name="reorder"):
        run = drive(services.run_start("reorder", id="reorder:m", actor="test").id)
    services.signal_send(run.id, "go", {}, actor="test")
    with override_workflow(b_then_a, name="reorder"):
        drive(run.id)

    assert scrape()[("durable_runs_blocked", ())] == 1


def test_sweep_lag_is_the_age_of_the_oldest_due_wake_at(scrape, clock):
    drive(services.run_start("nap", id="nap:1", actor="test").id)  # wakes in an hour

    clock.advance(timedelta(hours=1, seconds=30))

    assert scrape()[("durable_sweep_lag_seconds", ())] == pytest.approx(30, abs=1)


def test_the_last_sweeps_duration_is_visible_to_the_web_process(scrape, clock):
    services.run_start("three_steps", 1, id="t:due", actor="test")
    clock.advance(timedelta(minutes=1))

    sweep.sweep_due()

    metrics = scrape()
    assert metrics[("durable_sweep_last_dispatched", ())] == 1
    assert metrics[("durable_sweep_last_duration_seconds", ())] >= 0
    assert metrics[("durable_sweep_lag_seconds", ())] == 0


class Collect(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []
        self.addFilter(RunContextFilter())

    def emit(self, record):
        self.records.append(record)


def logs_inside_a_step() -> str:
    logging.getLogger("tests.steps").warning("sending the reminder")
    return "sent"


def logs_then_steps():
    workflow.step(lambda: None, name="first")
    return workflow.step(logs_inside_a_step)


def test_a_log_line_from_a_step_carries_the_run_id_and_position(clock):
    handler = Collect()
    logger = logging.getLogger("tests.steps")
    logger.addHandler(handler)
    try:
        with override_workflow(logs_then_steps, name="logs"):
            drive(services.run_start("logs", id="logs:1", actor="test").id)
        logger.warning("outside any run")
    finally:
        logger.removeHandler(handler)

    inside, outside = handler.records
    assert (inside.run_id, inside.position) == ("logs:1", 1)
    assert (outside.run_id, outside.position) == ("-", "-")


@pytest.fixture
def wall_clock(monkeypatch):
    """The sweep's record is in wall-clock seconds (web and workers compare it): set them."""
    now = [1_000_000.0]
    monkeypatch.setattr(sweep.time, "time", lambda: now[0])
    sweep.sweep_cache().delete(sweep.SWEEP_CACHE_KEY)
    return now


def test_a_sweep_more_than_two_intervals_after_the_last_is_logged_and_counted_as_late(
    scrape, clock, settings, wall_clock, caplog
):
    settings.DURABLE_SWEEP_INTERVAL_SECONDS = 1
    sweep.sweep_due()
    wall_clock[0] += 1.5  # on time: under two intervals
    sweep.sweep_due()
    wall_clock[0] += 70  # the sweep's queue was behind for 70 s
    with caplog.at_level(logging.WARNING, logger="durable.runtime.sweep"):
        sweep.sweep_due()

    metrics = scrape()
    assert metrics[("durable_sweep_last_gap_seconds", ())] == 70
    assert metrics[("durable_sweep_late_total", ())] == 1
    assert "the sweep ran 70.0 s after the previous one" in caplog.text
    assert "durable-sweep" in caplog.text


def test_a_sweep_on_time_logs_nothing_and_counts_no_late_sweep(
    scrape, clock, settings, wall_clock, caplog
):
    settings.DURABLE_SWEEP_INTERVAL_SECONDS = 1
    with caplog.at_level(logging.WARNING, logger="durable.runtime.sweep"):
        for _ in range(3):
            sweep.sweep_due()
            wall_clock[0] += 1.0

    assert scrape()[("durable_sweep_late_total", ())] == 0
    assert "the sweep ran" not in caplog.text
