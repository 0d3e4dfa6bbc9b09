"""workflow.deprecate_patch: the patched branch is kept alone; runs that recorded the patch
marker and runs started after the deprecation both replay."""

import pytest

from durable import services, workflow
from durable.features import history
from durable.models import EntryKind, JournalEntry, RunStatus
from durable.testing import drive, override_workflow
from tests.durable.workflows import record

pytestmark = pytest.mark.django_db


def patched_reminder() -> str:
    if workflow.patched("email-reminder"):
        workflow.step(record, "email", name="email")
    workflow.wait_for_signal("go")
    return "done"


def deprecated_reminder() -> str:
    workflow.deprecate_patch("email-reminder")
    workflow.step(record, "email", name="email")
    workflow.wait_for_signal("go")
    return "done"


def replays(run_id: str) -> bool:
    return history.history_replay(
        history.history_parse(history.history_export(run_id), source="test")
    ).ok


def test_a_run_that_recorded_the_marker_goes_on_after_the_deprecation(clock):
    with override_workflow(patched_reminder, name="reminder"):
        run = drive(services.run_start("reminder", id="reminder:old", actor="test").id)
    services.signal_send(run.id, "go", {}, actor="test")

    with override_workflow(deprecated_reminder, name="reminder"):
        assert replays(run.id)
        run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "done")


def test_a_run_started_after_the_deprecation_records_no_marker_and_replays(clock):
    with override_workflow(deprecated_reminder, name="reminder"):
        run = drive(services.run_start("reminder", id="reminder:new", actor="test").id)
        assert replays(run.id)

    assert not JournalEntry.objects.filter(run_id=run.id, kind=EntryKind.PATCH).exists()
    assert list(JournalEntry.objects.filter(run_id=run.id).values_list("position", "name")) == [
        (0, "email"),
        (1, "go"),
    ]
