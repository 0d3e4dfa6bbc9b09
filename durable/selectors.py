"""Reads on runs for views, the admin, the API and tests."""
from datetime import datetime
from typing import NamedTuple

from durable.errors import RunNotFound
from durable.models import AuditEvent, JournalEntry, Signal, WorkflowRun


class RunActor(NamedTuple):
    """One audited action on a run: who (the actor as the service recorded it), what, when."""

    actor: str
    action: str
    at: datetime


def run_get(run_id: str) -> WorkflowRun:
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def run_journal(run_id: str) -> list[JournalEntry]:
    return list(JournalEntry.objects.filter(run_id=run_id).order_by("position"))


def run_signals(run_id: str) -> list[Signal]:
    return list(Signal.objects.filter(run_id=run_id).order_by("id"))


def run_actors(run_id: str, *, actions: tuple[str, ...] | None = None) -> list[RunActor]:
    """Who did what to a run, oldest first, from its durable audit trail (start, signal,
    cancel, retry, wake; ``actions`` narrows it). Apps ask this, never the audit table
    (segregation of duties: whoever acted on a run may not approve what it asks)."""
    events = AuditEvent.objects.filter(run_id=run_id)
    if actions is not None:
        events = events.filter(action__in=actions)
    return [RunActor(actor, action, at) for actor, action, at in
            events.order_by("created_at", "id").values_list("actor", "action", "created_at")]
