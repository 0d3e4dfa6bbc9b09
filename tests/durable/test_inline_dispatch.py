"""DURABLE_DISPATCHER = "inline": a run advances in the process whose commit dispatched it, with
no broker and no worker (a first project, a script, the wheel's example)."""

import pytest

from durable import services
from durable.models import RunStatus, WorkflowRun

pytestmark = pytest.mark.django_db


def test_a_run_started_and_signalled_inline_completes_without_a_worker(
    settings, django_capture_on_commit_callbacks
):
    settings.DURABLE_DISPATCHER = "inline"

    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start("step_wait_step", id="inline:1", actor="test")
    waiting = WorkflowRun.objects.get(pk=run.id)
    with django_capture_on_commit_callbacks(execute=True):
        services.signal_send(run.id, "go", {"value": "now"}, actor="test")
    done = WorkflowRun.objects.get(pk=run.id)

    assert (waiting.status, waiting.waiting_for) == (RunStatus.WAITING, "signal:go")
    assert (done.status, done.result) == (RunStatus.COMPLETED, ["before", "now", "after"])


def test_a_timer_is_left_to_the_sweep(settings, django_capture_on_commit_callbacks):
    from durable.runtime.inline import advance_inline

    settings.DURABLE_DISPATCHER = "none"
    run = services.run_start("step_wait_step", id="inline:2", actor="test")

    advance_inline(run.id, delay=5)

    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.PENDING
