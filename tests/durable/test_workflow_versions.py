"""Versions side by side: a run keeps the code it started with; new runs take the newest."""

import pytest

from durable import services, workflow
from durable.models import RunStatus
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, record

pytestmark = pytest.mark.django_db


def greeting_v1(name: str) -> str:
    workflow.step(record, "ask", name="ask")
    workflow.wait_for_signal("answered")
    return workflow.step(record, f"hello {name}", name="greet")


def greeting_v2(name: str) -> str:
    workflow.step(record, "ask", name="ask")
    workflow.step(record, "remind", name="remind")  # a new step: v1 journals lack it
    workflow.wait_for_signal("answered")
    return workflow.step(record, f"welcome {name}", name="welcome")


def test_runs_started_on_v1_finish_on_v1_while_new_runs_start_on_v2(clock):
    with override_workflow(greeting_v1, name="greeting_versions", version=1):
        old = services.run_start(
            "greeting_versions", "ana", id="greeting_versions:old", actor="test"
        )
        drive(old.id)

        with override_workflow(greeting_v2, name="greeting_versions", version=2):  # the deploy
            new = services.run_start(
                "greeting_versions", "rui", id="greeting_versions:new", actor="test"
            )
            drive(new.id)
            services.signal_send(old.id, "answered", {}, actor="test")
            services.signal_send(new.id, "answered", {}, actor="test")
            old, new = drive(old.id), drive(new.id)

    assert (old.workflow_version, old.status, old.result) == (1, RunStatus.COMPLETED, "hello ana")
    assert (new.workflow_version, new.status, new.result) == (2, RunStatus.COMPLETED, "welcome rui")
    assert CALLS["remind"] == 1


def test_a_run_can_be_started_on_an_explicit_older_version_by_its_definition(clock):
    with (
        override_workflow(greeting_v1, name="greeting_versions", version=1) as v1,
        override_workflow(greeting_v2, name="greeting_versions", version=2),
    ):
        run = services.run_start(v1, "eva", id="greeting_versions:pinned", actor="test")
        services.signal_send(run.id, "answered", {}, actor="test")
        run = drive(run.id)

    assert (run.workflow_version, run.result) == (1, "hello eva")
