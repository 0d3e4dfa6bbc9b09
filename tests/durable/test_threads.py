"""Advances running at once in threads of one process, as under Celery's threads pool."""

import threading
from datetime import UTC, datetime

import pytest
from django.db import connection

from durable import current_step, services, workflow
from durable.models import WorkflowRun
from durable.testing import drive, fake_clock, override_workflow

pytestmark = pytest.mark.django_db(transaction=True)


def test_two_runs_advanced_at_once_by_two_threads_each_see_their_own_clock_and_step():
    both_in_a_step = threading.Barrier(2)

    def meet_the_other_thread() -> str:
        both_in_a_step.wait(timeout=20)
        return current_step().run_id

    def meet() -> dict:
        saw = workflow.step(meet_the_other_thread)
        return {"now": workflow.now().isoformat(), "step_saw": saw}

    clocks = {
        "meet:a": datetime(2030, 1, 1, tzinfo=UTC),
        "meet:b": datetime(2031, 6, 1, tzinfo=UTC),
    }
    errors = []

    def advance(run_id: str):
        try:
            with fake_clock(clocks[run_id]):
                drive(run_id, owner=f"thread:{run_id}")
        except BaseException as exc:  # surfaced by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    with override_workflow(meet, name="meet"):
        for run_id in clocks:
            services.run_start("meet", id=run_id, actor="test")
        threads = [threading.Thread(target=advance, args=(run_id,)) for run_id in clocks]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    assert errors == []
    assert {run.id: run.result for run in WorkflowRun.objects.filter(pk__in=clocks)} == {
        run_id: {"now": start.isoformat(), "step_saw": run_id} for run_id, start in clocks.items()
    }
