"""One contract, two stores: every recorded history replays to the same end through the
recorded store (its exported document) and through the live store (the same journal and
signals as rows of the database), so what CI replays from files is what a worker replays
from its tables.

Both are stopped at the first new work (a step to run, a value to draw, a wait to record):
the recorded store ends there by design, the live one is told to, since past that point
it would act and the other cannot.
"""

from dataclasses import fields
from pathlib import Path

import pytest
from django.utils.dateparse import parse_datetime

import tests.durable.test_onboarding_example  # noqa: F401  (registers example_onboarding)
from durable import clock, services
from durable.features import history
from durable.models import JournalEntry, Signal
from durable.runtime import registry
from durable.runtime.context import Diverged, Raised, ReplayContext, Returned, Suspended, replay
from durable.runtime.store import live
from durable.runtime.store.recorded import HistoryEnds, RecordedStore

HISTORIES = sorted((Path(__file__).resolve().parents[2] / "histories").glob("*.json"))

pytestmark = pytest.mark.django_db


class LiveUntilNewWork(live.LiveStore):
    """The live store, reading the journal and the signals from its tables as an advance
    does, and stopped where the recorded store stops: at the first new work."""

    def begin(self, position: int) -> None:
        raise HistoryEnds(position)

    def record(self, entry, **kwargs) -> None:
        raise HistoryEnds(entry.position)

    def start_child(self, entry, definition, args, kwargs, child_id: str) -> None:
        raise HistoryEnds(entry.position)


def ending(run, store) -> tuple:
    """Where a replay of ``run`` through ``store`` ends, in terms both stores can give."""
    definition = registry.get(run.workflow_name, run.workflow_version)
    args, kwargs = definition.decode_input(run.input)
    ctx = ReplayContext(run, store, store.load())
    try:
        outcome = replay(ctx, definition.fn, args, kwargs)
    except HistoryEnds as end:
        return "stops", end.position
    if isinstance(outcome, Suspended):
        return "stops", outcome.suspend.position
    if isinstance(outcome, Returned):
        return "returns", outcome.value
    if isinstance(outcome, Raised):
        return "raises", type(outcome.error).__name__, ctx.position
    assert isinstance(outcome, Diverged)
    return "diverges", type(outcome.divergence).__name__, ctx.position


def stored(recorded: history.History) -> str:
    """The history's run, journal and signals as rows, the run claimable; its id."""
    definition = registry.get(recorded.run.workflow_name, recorded.run.workflow_version)
    args, kwargs = definition.decode_input(recorded.run.input)
    run = services.run_start(
        recorded.run.workflow_name, *args, id=f"contract:{recorded.run.id}", actor="test", **kwargs
    )
    now = clock.now()
    JournalEntry.objects.bulk_create(
        JournalEntry(
            run_id=run.id,
            position=entry.position,
            kind=entry.kind,
            name=entry.name,
            status=entry.status,
            result=entry.result,
            error=entry.error,
            attempt=entry.attempt,
            idempotency_key=entry.idempotency_key,
            wake_at=parse_datetime(entry.wake_at) if entry.wake_at else None,
            created_at=now,
            updated_at=now,
        )
        for entry in recorded.journal.values()
    )
    Signal.objects.bulk_create(
        Signal(
            run_id=run.id,
            name=signal["name"],
            payload=signal["payload"],
            dedupe_key=signal["dedupe_key"],
            consumed_position=signal["consumed_position"],
            created_at=parse_datetime(signal["created_at"]) if signal.get("created_at") else now,
        )
        for signal in recorded.signals
    )
    return run.id


def through_the_live_store(recorded: history.History) -> tuple:
    run, lease = live.claim(stored(recorded), owner="contract")
    store = LiveUntilNewWork(**{f.name: getattr(lease, f.name) for f in fields(lease)})
    run.workflow_version = recorded.run.workflow_version  # run_start took the latest version
    return ending(run, store)


def through_the_recorded_store(recorded: history.History) -> tuple:
    return ending(recorded.run, RecordedStore(recorded))


def test_there_are_histories_to_hold_the_stores_to():
    assert len(HISTORIES) >= 20


@pytest.mark.parametrize("path", HISTORIES, ids=lambda path: path.stem)
def test_a_recorded_history_ends_the_same_through_both_stores(path, clock):
    recorded = history.history_load(path)

    expected = through_the_recorded_store(recorded)

    assert through_the_live_store(recorded) == expected
