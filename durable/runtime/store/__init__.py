"""What a replay context asks of the place its outcomes are kept.

Django's session backends in small: ``durable.runtime.context.ReplayContext`` holds the logic
(positions, matching, retries, signal order, deadlines) and talks only to this
interface. Two stores implement it: ``durable.runtime.store.live.LiveStore`` (fenced SQL on the
engine's tables) and ``durable.runtime.store.recorded.RecordedStore``, which answers from an
exported history and never writes.
"""

from durable.runtime.priorities import DEFAULT_PRIORITY


class Store:
    run_id: str

    def load(self) -> dict:
        """The journal recorded so far, by position (``JournalEntry`` objects)."""
        raise NotImplementedError

    def pending_signals(self) -> list:
        """Signals not yet consumed, oldest first (``Signal`` objects)."""
        raise NotImplementedError

    def begin(self, position: int) -> None:
        """New work is about to happen at ``position`` (a step runs, a value is drawn, a
        wait is recorded). A store that can only replay ends the replay here."""

    def record(self, entry, *, effect=None, consume=(), attributes=None) -> None:
        """Persist ``entry``: a new journal entry, or the new outcome of one already recorded
        (a wait that ended, a step's next attempt). ``effect`` (an atomic step's body) runs,
        the signals in ``consume`` are marked consumed at the entry's position, and
        ``attributes`` (a dict) are merged into the run's search attributes, in the same
        transaction: all of it commits, or none of it."""
        raise NotImplementedError

    def step_running(self, deadline) -> None:
        """A step with a timeout started (``deadline``) or ended (None): keep the run only
        that long."""

    def start_child(
        self, entry, definition, args, kwargs, child_id: str, priority: int = DEFAULT_PRIORITY
    ) -> None:
        """Record ``entry`` (a child's journal entry) and start the child run ``child_id``
        of ``definition`` with that input, at the parent's ``priority``, in one transaction."""
        raise NotImplementedError

    def acquire_limit(self, limit, key: str, position: int, queue: str, priority: int = 5):
        """Take ``limit`` (a ``durable.runtime.limits.Limit``) under ``key`` for the step at
        ``position``, in line at ``priority`` (higher first): None when taken, else the time
        the run should wait until."""
        raise NotImplementedError

    def release_limit(self, limit, key: str, position: int) -> None:
        """The step at ``position`` ended: what it took of ``limit`` is given back."""
        raise NotImplementedError
