"""Strict mode: a workflow body that reads the clock, draws randomness or does I/O is blocked."""

import datetime
import logging
import random
import socket
import time
import urllib.request
import uuid
from datetime import datetime as dt

import pytest
from django.test import override_settings
from django.utils import timezone

from durable import services, workflow
from durable.models import RunStatus
from durable.runtime import strict
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, record
from tests.effects.models import Effect
from tests.support import run_python

pytestmark = pytest.mark.django_db


def run_body(body, name="strict_probe"):
    with override_workflow(body, name=name):
        run = services.run_start(name, id=f"{name}:1", actor="test")
        return drive(run.id)


def body_datetime_now():
    workflow.step(record, "before")
    return dt.now().isoformat()


def body_date_today():
    return datetime.date.today().isoformat()


def body_timezone_now():
    return timezone.now().isoformat()


def body_time_time():
    return time.time()


def body_random():
    return random.randint(1, 6)


def body_uuid4():
    return str(uuid.uuid4())


def body_open():
    with open(__file__) as source:
        return source.readline()


def body_socket():
    socket.create_connection(("127.0.0.1", 9), timeout=0.1)


def body_urllib():
    urllib.request.urlopen("http://127.0.0.1:9/", timeout=0.1)


def body_orm():
    return Effect.objects.count()


REFUSED = [
    (body_datetime_now, "datetime.now()", "workflow.now()"),
    (body_date_today, "date.today()", "workflow.now()"),
    (body_timezone_now, "django.utils.timezone.now()", "workflow.now()"),
    (body_time_time, "time.time()", "workflow.now()"),
    (body_random, "random.randint()", "workflow.random()"),
    (body_uuid4, "uuid.uuid4()", "workflow.uuid4()"),
    (body_open, "open(", "inside a step"),
    (body_socket, "socket.", "inside a step"),
    (body_urllib, "urllib.Request(", "inside a step"),
    (body_orm, "SQL 'SELECT", "move the query into a step"),
]


@pytest.mark.parametrize(("body", "call", "fix"), REFUSED, ids=[r[0].__name__ for r in REFUSED])
def test_a_call_that_breaks_replay_blocks_the_run_naming_the_call_and_the_fix(
    clock, body, call, fix
):
    run = run_body(body)

    assert run.status == RunStatus.BLOCKED
    assert run.error["type"] == "NondeterministicCall"
    assert call in run.error["message"]
    assert fix in run.error["message"]
    assert "tests/durable/test_strict.py:" in run.error["message"]


def body_swallows_errors():
    try:
        return time.time()
    except Exception:
        return "swallowed"


def test_the_body_cannot_swallow_the_error(clock):
    run = run_body(body_swallows_errors)

    assert run.status == RunStatus.BLOCKED


def stamp() -> float:
    return time.time() + random.random() + uuid.uuid4().int + dt.now().timestamp()


def body_with_effects_in_steps():
    def local_stamp() -> str:
        return dt.now().isoformat()

    workflow.step(stamp)
    workflow.step(local_stamp)
    workflow.step(lambda: uuid.uuid4().hex, name="token")
    return [workflow.now().isoformat(), str(workflow.uuid4()), workflow.random()]


def test_the_same_calls_inside_steps_and_the_deterministic_alternatives_run(clock):
    run = run_body(body_with_effects_in_steps)

    assert run.status == RunStatus.COMPLETED


def helper_that_reads_the_clock():
    return time.time()


def body_calls_a_helper():
    return helper_that_reads_the_clock()


def test_a_helper_called_by_the_body_is_blamed_at_its_own_line(clock):
    run = run_body(body_calls_a_helper)

    assert run.status == RunStatus.BLOCKED
    assert "return time.time()" in run.error["message"]


log = logging.getLogger(__name__)


def body_logs():
    log.warning("replayed or not, logging reads the clock for its own record")
    return workflow.step(record, "logged")


def test_libraries_reading_the_clock_for_themselves_are_not_refused(clock):
    run = run_body(body_logs)

    assert run.status == RunStatus.COMPLETED


def body_allowed_on_purpose():
    started = time.monotonic()  # durable: allow (diagnostics only)
    return started > 0


def test_a_line_marked_allow_runs(clock):
    run = run_body(body_allowed_on_purpose)

    assert run.status == RunStatus.COMPLETED


def body_allowed_across_lines():
    started = dt.now(
        tz=datetime.UTC,
    )  # durable: allow (where black and ruff leave a trailing comment of a split call)
    return started.year > 2000


def test_a_call_split_over_lines_is_allowed_by_the_marker_on_its_last_line(clock):
    run = run_body(body_allowed_across_lines)

    assert run.status == RunStatus.COMPLETED, run.error


def test_strict_mode_can_be_turned_off(clock):
    with override_settings(DURABLE_STRICT=False):
        run = run_body(body_time_time)

    assert run.status == RunStatus.COMPLETED


def test_outside_a_workflow_body_everything_behaves_normally():
    assert strict.installed()

    assert dt.now() > dt(2000, 1, 1)
    assert time.time() > 0
    assert 1 <= random.randint(1, 6) <= 6
    assert uuid.uuid4() != uuid.uuid4()


def test_a_fixed_body_resumes_after_retry(clock):
    with override_workflow(body_datetime_now, name="fixable"):
        run = services.run_start("fixable", id="fixable:1", actor="test")
        drive(run.id)

    with override_workflow(
        lambda: workflow.step(record, "before") and workflow.now().isoformat(), name="fixable"
    ):
        services.run_retry(run.id, actor="test")
        run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert CALLS["before"] == 1


@pytest.mark.integration
@pytest.mark.parametrize(
    "env",
    [{"DEBUG": "1"}, {"DEBUG": "1", "DURABLE_STRICT": "1"}],
    ids=["debug", "debug-and-strict"],
)
def test_strict_mode_leaves_the_models_as_their_migrations_describe_them(tmp_path, env):
    result = run_python(
        "manage.py", "makemigrations", "--check", "--dry-run", var_dir=tmp_path, **env
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "No changes detected" in result.stdout
