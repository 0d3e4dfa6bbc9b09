"""The recorded store: a replay's outcomes answered from an exported history.

``durable.features.history`` replays a run's exported document against the code deployed now; this
store is where the replay context reads it. It never runs a step and never writes.
"""

from contextlib import ExitStack, contextmanager

from django.conf import settings
from django.db import connections
from django.utils.dateparse import parse_datetime

from durable.errors import ControlFlow, Divergence
from durable.models import JournalEntry
from durable.runtime.context import describe
from durable.runtime.priorities import DEFAULT_PRIORITY
from durable.runtime.store import Store


class HistoryEnds(ControlFlow):
    """The code reached a call the history has no outcome for: everything before it matched."""

    def __init__(self, position: int, reason: str = "the journal ends there"):
        self.position = position
        self.reason = reason
        super().__init__(position)


class DatabaseInReplay(Divergence):
    """A workflow body queried the database: replay is read-only, and a body should not."""


def _refuse_queries(execute, sql, params, many, context_):
    raise DatabaseInReplay(f"the workflow body queried the database during replay: {sql[:120]}")


@contextmanager
def without_database():
    """Inside: any statement on any database raises DatabaseInReplay (a replay is answered
    from the history alone; a body that reads tables would answer from today's rows)."""
    with ExitStack() as stack:
        for alias in settings.DATABASES:
            stack.enter_context(connections[alias].execute_wrapper(_refuse_queries))
        yield


def _as_entry(run_id: str, recorded) -> JournalEntry:
    """A recorded entry as the (unsaved) row the replay context reads."""
    return JournalEntry(
        run_id=run_id,
        position=recorded.position,
        kind=recorded.kind,
        name=recorded.name,
        status=recorded.status,
        result=recorded.result,
        error=recorded.error,
        attempt=recorded.attempt,
        idempotency_key=recorded.idempotency_key,
        wake_at=parse_datetime(recorded.wake_at) if recorded.wake_at else None,
    )


class RecordedStore(Store):
    """Answers a replay from an exported history: never runs a step, never writes.

    Wherever the live store would do new work, the replay ends there: the history has
    told everything it knows, and all of it matched.
    """

    def __init__(self, history):
        self.history = history
        self.run_id = history.run.id

    def load(self) -> dict[int, JournalEntry]:
        return {
            position: _as_entry(self.run_id, entry)
            for position, entry in self.history.journal.items()
        }

    def pending_signals(self) -> list:
        return []

    def begin(self, position: int) -> None:
        raise HistoryEnds(position, self.reason_at(position))

    def record(self, entry, **kwargs) -> None:
        raise HistoryEnds(entry.position, self.reason_at(entry.position))

    def start_child(
        self, entry, definition, args, kwargs, child_id: str, priority: int = DEFAULT_PRIORITY
    ) -> None:
        raise HistoryEnds(entry.position, self.reason_at(entry.position))

    def reason_at(self, position: int) -> str:
        recorded = self.history.journal.get(position)
        if recorded is None:
            return "the journal ends there"
        return f"the run was {recorded.status} there ({describe(recorded.kind, recorded.name)})"
