"""Reads on runs for views, the admin, the API and tests."""
from durable.errors import RunNotFound
from durable.models import JournalEntry, Signal, WorkflowRun


def run_get(run_id: str) -> WorkflowRun:
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def run_journal(run_id: str) -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(run_id=run_id).order_by("position"))


def run_signals(run_id: str) -> list[Signal]:
    return list(Signal.objects.filter(run_id=run_id).order_by("id"))
