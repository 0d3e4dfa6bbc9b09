"""Crashes: a step interrupted mid-way runs again; the steps before it do not."""

import os
import signal
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.db import connection

from durable import services
from durable.models import RunStatus
from durable.testing import drive
from tests.durable.workflows import CALLS, Crash
from tests.effects.models import Effect
from tests.support import subprocess_env


@pytest.mark.django_db
def test_a_step_interrupted_by_an_exception_runs_again_and_the_steps_before_do_not(clock, settings):
    run = services.run_start("crash_in_middle", id="crash:1", actor="test")
    with pytest.raises(Crash):
        drive(run.id)

    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == ["first", "done", "last"]
    assert (CALLS["first"], CALLS["crashes_once"], CALLS["last"]) == (1, 2, 1)


@pytest.mark.django_db
def test_a_live_lease_keeps_another_worker_out(clock):
    run = services.run_start("crash_in_middle", id="crash:2", actor="test")
    with pytest.raises(Crash):
        drive(run.id)

    run = drive(run.id, owner="second-worker")

    assert run.status == RunStatus.RUNNING
    assert CALLS["crashes_once"] == 1


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.django_db(transaction=True)
def test_a_step_killed_by_sigkill_runs_again_with_the_same_key_and_the_steps_before_do_not():
    run = services.run_start("killed_mid_step", id="sigkill:1", actor="test")
    env = subprocess_env(SLOW_STEP_SECONDS="60", DURABLE_LEASE_SECONDS="1")
    code = "import django; django.setup(); from durable.testing import drive; drive('sigkill:1')"
    worker = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not Effect.objects.filter(run_id=run.id, name="slow_effect").exists():
            assert worker.poll() is None, "the worker exited before reaching the slow step"
            assert time.monotonic() < deadline, "the worker never reached the slow step"
            time.sleep(0.05)
        os.killpg(worker.pid, signal.SIGKILL)
    finally:
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL

    time.sleep(1.1)  # the dead worker's 1-second lease expires
    connection.close()
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == ["first", "slow done", "last"]
    effects = list(Effect.objects.filter(run_id=run.id).values_list("name", "idempotency_key"))
    assert [name for name, _ in effects] == ["first", "slow_effect", "slow_effect", "last"]
    assert effects[1][1] == effects[2][1] == "sigkill:1:1:slow_effect"
