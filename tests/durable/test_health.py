"""``manage.py durable health``: exit 0 only when the database, the broker and the sweep are
healthy."""

import io
import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.core.management import call_command

from durable import clock, services
from durable.models import WorkflowRun
from durable.runtime import sweep
from durable.surfaces import health as health_checks
from tests.support import ROOT

pytestmark = pytest.mark.django_db


def health(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("durable", "health", *args, stdout=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def sweep_just_ran():
    sweep.record_sweep(0.004, dispatched=2)


def test_a_healthy_stack_exits_zero_and_says_what_it_checked(sweep_just_ran):
    code, out = health()

    assert code == 0, out
    assert "ok   database:" in out and "migrations applied" in out
    assert "ok   broker: connected" in out
    assert "ok   sweep: last sweep" in out and "2 dispatched" in out


@pytest.fixture
def app_check(monkeypatch):
    """Register a check the way an app's ready() does, for this test only."""
    monkeypatch.setattr(health_checks, "_app_checks", list(health_checks._app_checks))
    return health_checks.register_health_check


def test_a_failing_check_registered_by_an_app_makes_health_fail(sweep_just_ran, app_check):
    app_check(lambda: health_checks.Check("ledger", False, "3 unbalanced days"))

    code, out = health()

    assert code == 1
    assert "FAIL ledger: 3 unbalanced days" in out and "ok   database:" in out


def test_an_app_check_that_raises_is_a_failure_not_a_crash(sweep_just_ran, app_check):
    def ledger_check():
        raise RuntimeError("no ledger table")

    app_check(ledger_check)

    code, out = health()

    assert code == 1
    assert "FAIL ledger_check: cannot check: RuntimeError: no ledger table" in out


def test_a_sweep_that_stopped_running_makes_health_fail(sweep_just_ran):
    sweep.sweep_cache().set(
        sweep.SWEEP_CACHE_KEY, {"duration": 0.01, "dispatched": 0, "at": time.time() - 3600}
    )

    code, out = health()

    assert code == 1
    assert "FAIL sweep: the last sweep ran 3600 s ago" in out


def test_runs_due_long_ago_mean_no_worker_advances_them(sweep_just_ran):
    run = services.run_start("three_steps", 1, id="health:stuck", actor="test")
    WorkflowRun.objects.filter(pk=run.id).update(wake_at=clock.now() - timedelta(minutes=10))

    code, out = health("--max-overdue", "60")

    assert code == 1
    assert "FAIL overdue runs: 1 run(s) due more than 60 s ago" in out


def test_an_unreachable_database_and_broker_each_fail_on_their_own(tmp_path):
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DEBUG": "1",
        "DURABLE_VAR_DIR": str(tmp_path),
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nowhere",
        "CELERY_BROKER_URL": "redis://127.0.0.1:1/0",
    }

    result = subprocess.run(
        [sys.executable, "manage.py", "durable", "health"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 1
    assert "FAIL database: unreachable" in result.stdout
    assert "FAIL broker: unreachable" in result.stdout
