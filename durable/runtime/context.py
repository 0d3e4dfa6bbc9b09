"""The replay context: what ``workflow.step``, ``wait_for_signal`` & co. do inside a run.

One class for live runs and recorded histories. Each durable call takes the next
journal position. If the journal has an entry there, the call must match it (kind and
name) and returns what it recorded; otherwise the call is performed now and recorded
before the body goes on. Where entries are kept is the store's business
(``durable.runtime.store``): no I/O happens here except through it.
"""

import functools
import inspect
import math
import random as random_module
import traceback
import uuid
from dataclasses import dataclass
from datetime import datetime

from durable import clock, codec
from durable.durations import as_timedelta
from durable.errors import (
    Cancelled,
    ChildFailed,
    ContinueAsNew,
    CrashLoop,
    Divergence,
    Handoff,
    JournalMismatch,
    PayloadError,
    StepFailed,
    StepTimeout,
    Suspend,
)
from durable.models import EntryKind, EntryStatus, JournalEntry
from durable.runtime import children, limits, registry, tracing
from durable.runtime.current import StepInfo, current, current_step, running_context, running_step  # noqa: F401 (public here too)
from durable.runtime.priorities import DEFAULT_PRIORITY, check_priority
from durable.runtime.retry import DEFAULT_RETRY, Retry

# An update request travels as a signal of this name prefix (durable.services.run_update).
UPDATE_SIGNAL_PREFIX = "durable.update:"


def describe(entry_or_kind, name=None) -> str:
    if isinstance(entry_or_kind, JournalEntry):
        return f"{entry_or_kind.kind} {entry_or_kind.name!r}"
    return f"{entry_or_kind} {name!r}"


@dataclass(frozen=True)
class Received:
    """What ``wait_for_any`` returns: the name of the signal that came, and its payload."""

    name: str
    payload: object


@dataclass(frozen=True)
class ChildHandle:
    """What ``start_child`` returns: the child run's id and workflow, to wait on."""

    id: str
    workflow: str


@functools.lru_cache(maxsize=4096)
def _accepts_idempotency_key(fn) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "idempotency_key" in params


def step_name(fn) -> str:
    """A step's default journal name, the same in every process: never a repr, which would
    carry a memory address (a ``functools.partial`` is named after the function it wraps,
    a callable object after its class)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return getattr(fn, "__name__", None) or type(fn).__qualname__


def error_of(exc: BaseException) -> dict:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
    }


# --- the driver: executor.advance and durable replay both run a body through this ---


@dataclass
class Returned:
    value: object


@dataclass
class Suspended:
    suspend: Suspend


@dataclass
class Diverged:
    divergence: Divergence


@dataclass
class Raised:
    error: Exception


@dataclass
class Continued:
    """The body called ``continue_as_new``: the run ends, and these are its successor's
    arguments."""

    args: tuple
    kwargs: dict


def replay(
    ctx: "ReplayContext", fn, args, kwargs
) -> Returned | Suspended | Diverged | Raised | Continued:
    """Run the workflow body once from position 0 against ``ctx``.

    Every other control flow (``Fenced``, ``StoreUnavailable``, a recorded history's end)
    belongs to the store and goes on to the caller.
    """
    ctx.position = 0
    token = running_context.set(ctx)
    try:
        value = fn(*args, **kwargs)
        ctx.check_fully_replayed()
    except Suspend as suspend:
        return Suspended(suspend)
    except ContinueAsNew as continued:
        return Continued(continued.args_, continued.kwargs)
    except Divergence as divergence:
        return Diverged(divergence)
    except Exception as exc:
        return Raised(exc)
    finally:
        running_context.reset(token)
    return Returned(value)


class ReplayContext:
    def __init__(
        self,
        run,
        store,
        journal: dict[int, JournalEntry],
        *,
        crash_loop: str | None = None,
        queue: str | None = None,
        default_queue: str | None = None,
    ):
        self.run = run
        self.store = store
        self.journal = journal
        self.position = 0
        # Set when the run's worker died at the journal's end too often: the next new call
        # there blocks the run instead of running (see executor.advance).
        self.crash_loop = crash_loop
        # A graceful cancel to deliver at the first call that would pause or start new
        # work ({"reason", "actor", "deadline"}), and whether the body has received it.
        self.cancel_request = getattr(run, "cancel_request", None)
        self.cancel_delivered = False
        self._signals = None
        # The Celery queue this advance runs on (None: any, as in-process drivers run), and
        # the one a step asks for when it names none (the workflow's).
        self.queue = queue
        self.default_queue = default_queue
        # Query handlers the body registered so far (workflow.on_query): read by a query's
        # replay at the run's position, never journaled.
        self.queries: dict = {}
        # Update handlers (workflow.on_update): name -> (handler, validator).
        self.updates: dict = {}

    # --- bookkeeping ---

    def _next(self, kind: str, name: str) -> tuple[int, JournalEntry | None]:
        if self.updates or self.position in self.journal:
            self._updates_at(None)
        position = self.position
        self.position += 1
        entry = self.journal.get(position)
        if entry is not None and (entry.kind != kind or entry.name != name):
            raise JournalMismatch(position, describe(kind, name), entry)
        if entry is not None and entry.status == EntryStatus.CANCELLED:
            self.cancel_delivered = True
            raise Cancelled(entry.error.get("message", ""), entry.error.get("actor", ""))
        return position, entry

    def _begin(
        self,
        position: int,
        kind: str,
        name: str,
        entry: JournalEntry | None = None,
        *,
        cancellable: bool = True,
    ) -> None:
        """New work at ``position``: refused in a crash loop, and by a store that only
        replays; a pending graceful cancel is delivered here instead."""
        if self.crash_loop is not None and position == len(self.journal):
            raise CrashLoop(
                f"crash loop at {kind} {name!r} (position {position}): {self.crash_loop}"
            )
        self.store.begin(position)
        if cancellable:
            self._deliver_cancel(position, kind, name, entry)

    def _pause(self, position: int, entry: JournalEntry, *, insert: bool) -> None:
        """The body is about to suspend at ``entry``: deliver a pending cancel instead, else
        record the wait if it is new, then apply the updates that came (while it waits)."""
        if self.cancel_request is not None and not self.cancel_delivered:
            self.store.begin(position)
            self._deliver_cancel(position, entry.kind, entry.name, None if insert else entry)
        if insert:
            self._record(entry)
        if self.updates:
            self._updates_at(position)

    # --- updates (workflow.on_update): journaled where they were applied ---

    def _updates_at(self, during: int | None) -> None:
        """Replay the updates recorded here, then, at the journal's end, apply the ones waiting.

        An update entry says where it was applied: before the call at its own position
        (``during`` None), or while the body waited in the call at position ``during``. Replay
        runs each handler at that same point, so it sees the body's state as it was then."""
        while True:
            entry = self.journal.get(self.position)
            if (
                entry is None
                or entry.kind != EntryKind.UPDATE
                or (entry.result or {}).get("during") != during
            ):
                break
            self._run_update(entry)
        if self.position in self.journal or not self.updates:
            return
        for signal in [
            s for s in self._pending_signals() if s.name.startswith(UPDATE_SIGNAL_PREFIX)
        ]:
            name = signal.name[len(UPDATE_SIGNAL_PREFIX) :]
            position = self.position
            self._begin(position, EntryKind.UPDATE, name, cancellable=False)
            request = signal.payload or {}
            entry = self._new_entry(
                position,
                EntryKind.UPDATE,
                name,
                status=EntryStatus.STARTED,
                idempotency_key=str(request.get("id", ""))[:255],
                started_at=clock.now(),
                result={"during": during, "payload": request.get("payload")},
            )
            self._record(entry, consume=[signal])
            self._signals.remove(signal)
            self._run_update(entry)

    def _run_update(self, entry: JournalEntry) -> None:
        """Run the handler of the update at ``entry``: its steps journal after it; its outcome
        is recorded on the entry once (a replay runs it for the state it leaves, and keeps the
        outcome recorded)."""
        self.position = entry.position + 1
        handler, _ = self.updates.get(entry.name, (None, None))
        try:
            if handler is None:
                raise LookupError(
                    f"no handler for update {entry.name!r} at position {entry.position}"
                )
            encoded = codec.encode(handler(codec.decode((entry.result or {}).get("payload"))))
            outcome, error = EntryStatus.COMPLETED, None
        except Exception as exc:
            encoded, outcome, error = None, EntryStatus.FAILED, error_of(exc)
        if entry.status != EntryStatus.STARTED:
            return
        entry.status, entry.error = outcome, error
        entry.result = {**(entry.result or {}), "value": encoded}
        self._record(entry)

    def on_update(self, name: str, handler, validator=None) -> None:
        """Apply update ``name`` with ``handler(payload)`` from here on (``validator(payload)``
        runs on the caller's side first). Takes no journal position."""
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError(f"an update name is text of 1 to 200 characters, not {name!r}")
        if not callable(handler) or (validator is not None and not callable(validator)):
            raise TypeError(f"update {name!r}: the handler and the validator must be callable")
        self.updates[name] = (handler, validator)

    def _deliver_cancel(
        self, position: int, kind: str, name: str, entry: JournalEntry | None
    ) -> None:
        request = self.cancel_request
        if request is None or self.cancel_delivered:
            return
        insert = entry is None
        if insert:
            entry = self._new_entry(position, kind, name, status=EntryStatus.CANCELLED)
        entry.status, entry.wake_at = EntryStatus.CANCELLED, None
        entry.error = {
            "type": "Cancelled",
            "message": request.get("reason", ""),
            "actor": request.get("actor", ""),
        }
        self._record(entry)
        self.cancel_delivered = True
        raise Cancelled(request.get("reason", ""), request.get("actor", ""))

    def _new_entry(self, position: int, kind: str, name: str, **fields) -> JournalEntry:
        now = clock.now()
        return JournalEntry(
            run_id=self.run.id,
            position=position,
            kind=kind,
            name=name,
            created_at=now,
            updated_at=now,
            **fields,
        )

    def _record(self, entry: JournalEntry, *, effect=None, consume=()) -> JournalEntry:
        self.store.record(entry, effect=effect, consume=consume)
        self.journal[entry.position] = entry
        return entry

    def check_fully_replayed(self) -> None:
        if self.journal and max(self.journal) >= self.position:
            entry = self.journal[self.position]
            raise JournalMismatch(
                self.position,
                "nothing more (the workflow returned)",
                entry,
                message=f"journal mismatch at position {self.position}: the code has finished "
                f"but the journal recorded {describe(entry)} there",
            )

    # --- deterministic values ---

    def _recorded_value(self, kind: str, produce, hint):
        name = str(kind)  # the kind is its name too: "now", never "EntryKind.NOW" in a message
        position, entry = self._next(kind, name)
        if entry is None:
            self._begin(position, kind, name, cancellable=False)
            entry = self._new_entry(
                position, kind, name, status=EntryStatus.COMPLETED, result=codec.encode(produce())
            )
            self._record(entry)
        return codec.decode(entry.result, hint)

    def now(self) -> datetime:
        return self._recorded_value(EntryKind.NOW, clock.now, datetime)

    def uuid4(self) -> uuid.UUID:
        return self._recorded_value(EntryKind.UUID, uuid.uuid4, uuid.UUID)

    def random(self) -> float:
        return self._recorded_value(EntryKind.RANDOM, random_module.random, float)

    def patched(self, change_id: str) -> bool:
        entry = self.journal.get(self.position)
        if entry is not None:
            if entry.kind == EntryKind.PATCH and entry.name == change_id:
                self.position += 1
                return True
            return False  # recorded before the patch existed: take the old path
        self._begin(self.position, EntryKind.PATCH, change_id, cancellable=False)
        entry = self._new_entry(
            self.position, EntryKind.PATCH, change_id, status=EntryStatus.COMPLETED
        )
        self.position += 1
        self._record(entry)
        return True

    def deprecate_patch(self, change_id: str) -> None:
        """The patched branch is now the only one: record nothing, and step over the marker
        of a run that recorded ``patched(change_id)`` here, so both replay."""
        entry = self.journal.get(self.position)
        if entry is not None and entry.kind == EntryKind.PATCH and entry.name == change_id:
            self.position += 1

    # --- steps ---

    def step(
        self,
        fn,
        *args,
        idempotency_key=None,
        name=None,
        retry: Retry | None = None,
        atomic: bool = False,
        timeout=None,
        queue: str | None = None,
        limit=None,
        priority: int | None = None,
        **kwargs,
    ):
        name = name or step_name(fn)
        position, entry = self._next(EntryKind.STEP, name)
        if entry is not None:
            self._updates_at(position)
        hint = codec.return_hint(fn)
        policy = retry or DEFAULT_RETRY
        now = clock.now()
        if entry is not None:
            if entry.status == EntryStatus.COMPLETED:
                return codec.decode(entry.result, hint)
            if entry.status == EntryStatus.FAILED:
                raise StepFailed(
                    name,
                    entry.error.get("type", "Error"),
                    entry.error.get("message", ""),
                    entry.attempt,
                )
            if entry.status == EntryStatus.RETRYING and entry.wake_at and now < entry.wake_at:
                self._pause(position, entry, insert=False)
                raise Suspend(entry.wake_at, f"retry:{name}", position)
            if entry.status == EntryStatus.STARTED and entry.wake_at and now >= entry.wake_at:
                # The attempt outlived its timeout (its worker hung, or died after it).
                self._begin(position, EntryKind.STEP, name, entry)
                self._failed_attempt(
                    entry,
                    name,
                    StepTimeout(
                        f"step {name!r} was still running {as_timedelta(timeout) or ''} after it "
                        f"started (attempt {entry.attempt})"
                    ),
                    policy,
                )
        self._begin(position, EntryKind.STEP, name, entry)
        taken = self._take_turn(position, queue, limit, priority)
        key = idempotency_key or f"{self.run.id}:{position}:{name}"
        if entry is None:
            entry = self._new_entry(
                position,
                EntryKind.STEP,
                name,
                status=EntryStatus.RETRYING,
                idempotency_key=key[:255],
            )
        entry.attempt += 1
        entry.started_at = now
        timeout = as_timedelta(timeout)
        deadline = now + timeout if timeout is not None else None
        if deadline is not None:  # journaled first, so the next holder can tell it timed out
            entry.status, entry.wake_at = EntryStatus.STARTED, deadline
            self._record(entry)
        if _accepts_idempotency_key(fn):
            kwargs["idempotency_key"] = key
        info = StepInfo(self.run.id, position, name, entry.attempt, key)
        outcome = {}

        def perform():
            value = fn(*args, **kwargs)
            if deadline is not None and clock.now() > deadline:
                raise StepTimeout(f"step {name!r} took longer than its timeout of {timeout}")
            outcome["encoded"] = codec.encode(value)
            entry.status, entry.result, entry.error, entry.wake_at = (
                EntryStatus.COMPLETED,
                outcome["encoded"],
                None,
                None,
            )

        token = running_step.set(info)
        if deadline is not None:
            self.store.step_running(deadline)
        try:
            with tracing.span(
                "durable.step",
                {
                    "durable.run_id": self.run.id,
                    "durable.step.name": name,
                    "durable.step.position": position,
                    "durable.step.attempt": entry.attempt,
                },
            ):
                if atomic:  # the step's own writes commit with its journal entry, or not at all
                    self._record(entry, effect=perform)
                else:
                    perform()
                    self._record(entry)
        except Exception as exc:
            self._failed_attempt(entry, name, exc, policy)
        finally:
            running_step.reset(token)
            if deadline is not None:
                self.store.step_running(None)
            if taken is not None:
                self.store.release_limit(*taken, position)
        return codec.decode(outcome["encoded"], hint)

    def _take_turn(
        self, position: int, queue: str | None, limit, priority: int | None = None
    ) -> tuple | None:
        """Before new work at a step: hand the run to the step's queue if this advance runs
        on another, then take the step's limit, or wait in line for it (a durable timer).
        Returns what was taken, for the release; nothing costs a statement without a limit."""
        wanted = queue or self.default_queue
        if self.queue is not None and wanted != self.queue:
            raise Handoff(wanted, position)
        if limit is None:
            return None
        declared, key = limits.resolve(limit)
        if priority is None:
            priority = getattr(self.run, "priority", DEFAULT_PRIORITY)
        wake_at = self.store.acquire_limit(
            declared, key, position, wanted or "", check_priority(priority)
        )
        if wake_at is not None:
            raise Suspend(wake_at, f"limit:{declared.name}", position)
        return declared, key

    def _failed_attempt(self, entry: JournalEntry, name: str, exc: Exception, policy: Retry):
        """Record a failed attempt, then raise: StepFailed when retries are spent, else a
        Suspend until the back-off has passed (a durable timer, never a sleeping worker)."""
        if isinstance(exc, PayloadError) or not policy.should_retry(exc, entry.attempt):
            entry.status, entry.error, entry.wake_at = EntryStatus.FAILED, error_of(exc), None
            self._record(entry)
            raise StepFailed(name, type(exc).__name__, str(exc), entry.attempt) from exc
        entry.status, entry.error = EntryStatus.RETRYING, error_of(exc)
        entry.wake_at = clock.now() + policy.delay_after(entry.attempt)
        self._record(entry)
        raise Suspend(entry.wake_at, f"retry:{name}", entry.position) from exc

    # --- waits ---

    def _pending_signals(self) -> list:
        if self._signals is None:
            self._signals = list(self.store.pending_signals())
        return self._signals

    def reload_signals(self) -> None:
        self._signals = None

    def _wait(self, names: list[str], *, timeout=None, deadline=None, type=None):
        """The oldest unconsumed signal among ``names`` as (name, payload, arrival time), or
        None once the deadline passes. The deadline is fixed at the first encounter (from
        ``timeout``, or ``deadline`` when given) and recorded: replay never moves it."""
        label = "|".join(names)
        position, entry = self._next(EntryKind.SIGNAL, label)
        if entry is not None:
            self._updates_at(position)
        if entry is not None and entry.status == EntryStatus.COMPLETED:
            result = entry.result
            if result.get("timed_out"):
                return None
            return (
                result.get("name", names[0]),
                codec.decode(result.get("payload"), type),
                result.get("at"),
            )
        now = clock.now()
        insert = entry is None
        if insert:
            self._begin(position, EntryKind.SIGNAL, label)
            if deadline is None and timeout is not None:
                deadline = now + as_timedelta(timeout)
            entry = self._new_entry(
                position,
                EntryKind.SIGNAL,
                label,
                status=EntryStatus.WAITING,
                wake_at=deadline,
                started_at=now,
            )
        deadline = entry.wake_at
        signal = next((s for s in self._pending_signals() if s.name in names), None)
        if signal is not None:
            self._begin(position, EntryKind.SIGNAL, label, None if insert else entry)
            arrived = signal.created_at.isoformat() if signal.created_at else None
            entry.status = EntryStatus.COMPLETED
            entry.result = {
                "signal_id": signal.pk,
                "name": signal.name,
                "payload": signal.payload,
                "at": arrived,
            }
            self._record(entry, consume=[signal])
            self._signals.remove(signal)
            return signal.name, codec.decode(signal.payload, type), arrived
        if deadline is not None and now >= deadline:
            self._begin(position, EntryKind.SIGNAL, label, None if insert else entry)
            entry.status, entry.result = EntryStatus.COMPLETED, {"timed_out": True}
            self._record(entry)
            return None
        self._pause(position, entry, insert=insert)
        raise Suspend(deadline, f"signal:{label}", position)

    def wait_for_signal(self, name: str, timeout=None, type=None):
        received = self._wait([name], timeout=timeout, type=type)
        return None if received is None else received[1]

    def wait_for_any(self, names, timeout=None, type=None) -> Received | None:
        if isinstance(names, str) or not names or not all(isinstance(n, str) and n for n in names):
            raise TypeError("wait_for_any takes a list of signal names, e.g. ['paid', 'voided']")
        received = self._wait(list(names), timeout=timeout, type=type)
        return None if received is None else Received(received[0], received[1])

    def collect_signals(self, name: str, *, quiet, timeout=None, type=None) -> list | None:
        """Wait for the first signal ``name``, then take every one that follows until none has
        arrived for ``quiet``: one batch, as a customer sends it. None at ``timeout``."""
        quiet = as_timedelta(quiet)
        first = self._wait([name], timeout=timeout, type=type)
        if first is None:
            return None
        batch, last_arrival = [first[1]], first[2]
        while True:
            since = datetime.fromisoformat(last_arrival) if last_arrival else clock.now()
            more = self._wait([name], deadline=since + quiet, type=type)
            if more is None:
                return batch
            batch.append(more[1])
            last_arrival = more[2]

    def drain_signals(self, name: str, type=None) -> list:
        """Every signal ``name`` buffered now, oldest first, consumed in one journal entry.
        Never suspends: an empty list when there is none."""
        position, entry = self._next(EntryKind.DRAIN, name)
        if entry is not None:
            return [codec.decode(payload, type) for payload in entry.result.get("payloads", [])]
        self._begin(position, EntryKind.DRAIN, name, cancellable=False)
        taken = [s for s in self._pending_signals() if s.name == name]
        entry = self._new_entry(
            position,
            EntryKind.DRAIN,
            name,
            status=EntryStatus.COMPLETED,
            result={"signal_ids": [s.pk for s in taken], "payloads": [s.payload for s in taken]},
        )
        self._record(entry, consume=taken)
        for signal in taken:
            self._signals.remove(signal)
        return [codec.decode(s.payload, type) for s in taken]

    def sleep(self, duration) -> None:
        duration = as_timedelta(duration)
        position, entry = self._next(EntryKind.SLEEP, "sleep")
        if entry is not None:
            self._updates_at(position)
        if entry is not None and entry.status == EntryStatus.COMPLETED:
            return None
        now = clock.now()
        if entry is None:
            self._begin(position, EntryKind.SLEEP, "sleep")
            entry = self._new_entry(
                position,
                EntryKind.SLEEP,
                "sleep",
                status=EntryStatus.WAITING,
                wake_at=now + duration,
                started_at=now,
            )
            if duration.total_seconds() > 0:
                self._record(entry)
                raise Suspend(entry.wake_at, "sleep", position)
            entry.status = EntryStatus.COMPLETED
            self._record(entry)
            return None
        if now < entry.wake_at:
            self._pause(position, entry, insert=False)
            raise Suspend(entry.wake_at, "sleep", position)
        self._begin(position, EntryKind.SLEEP, "sleep", entry)
        entry.status = EntryStatus.COMPLETED
        self._record(entry)
        return None

    # --- child runs ---

    def start_child(self, workflow, args, kwargs, *, id: str | None = None) -> ChildHandle:
        """Start a child run in the transaction that journals it (so a crash neither loses
        nor doubles it); on replay return the recorded handle."""
        definition = registry.resolve(workflow)
        position, entry = self._next(EntryKind.CHILD, definition.name)
        if entry is None:
            self._begin(position, EntryKind.CHILD, definition.name)
            child_id = id or f"{self.run.id}:child:{position}"
            entry = self._new_entry(
                position,
                EntryKind.CHILD,
                definition.name,
                status=EntryStatus.COMPLETED,
                result={"id": child_id, "workflow": definition.name},
            )
            self.store.start_child(
                entry,
                definition,
                args,
                kwargs,
                child_id,
                getattr(self.run, "priority", DEFAULT_PRIORITY),
            )
            self.journal[position] = entry
        return ChildHandle(entry.result["id"], entry.result["workflow"])

    def wait_for_child(self, handle: ChildHandle, *, timeout=None, deadline=None):
        """The child's result once it completed; ChildFailed if it failed or was cancelled;
        None at the deadline (``deadline`` if given, else ``timeout`` from the first wait;
        the child goes on: cancel it if it must stop)."""
        received = self._wait([children.signal_name(handle.id)], timeout=timeout, deadline=deadline)
        if received is None:
            return None
        outcome = received[1]
        if outcome.get("status") != "completed":
            error = outcome.get("error") or {}
            raise ChildFailed(
                handle.id,
                error.get("type", "Error"),
                error.get("message", ""),
                outcome.get("status", "failed"),
            )
        try:
            hint = codec.return_hint(registry.resolve(handle.workflow).fn)
        except Exception:  # the child's code is gone: its result comes back as plain JSON
            hint = None
        return codec.decode(outcome.get("result"), hint)

    def wait_for_children(self, handles, *, timeout=None) -> list:
        """Each child's result in ``handles``' order, under one deadline: the first failure
        raises ChildFailed; at the deadline, None stands for each child not finished."""
        results, deadline = [], None
        for handle in handles:
            position = self.position  # where this wait is journaled, with the deadline it fixed
            results.append(self.wait_for_child(handle, timeout=timeout, deadline=deadline))
            deadline = deadline or self.journal[position].wake_at
        return results

    # --- continue-as-new ---

    def continue_as_new(self, args: tuple, kwargs: dict):
        """End the run here and start its successor with these arguments and an empty
        journal. Takes no journal position: the run's history ends where it was."""
        self.check_fully_replayed()  # an entry recorded past here: the code changed
        raise ContinueAsNew(args, kwargs)

    # --- queries ---

    def on_query(self, name: str, handler) -> None:
        """Answer query ``name`` with ``handler(*args)`` from here on (registered again, the
        latest wins). Takes no journal position: a run that registers a query replays as
        the same journal, and one that stops registering it still replays."""
        if not isinstance(name, str) or not name or len(name) > 200:
            raise ValueError(f"a query name is text of 1 to 200 characters, not {name!r}")
        if not callable(handler):
            raise TypeError(
                f"query {name!r}: the handler must be callable, not {type(handler).__name__}"
            )
        self.queries[name] = handler

    # --- search attributes ---

    def set_attributes(self, attributes: dict) -> None:
        """Journal the attributes and merge them into the run's in the same transaction;
        on replay the entry is there and nothing is written again."""
        check_attributes(attributes)
        if not attributes:
            return None
        position, entry = self._next(EntryKind.ATTRIBUTES, "attributes")
        if entry is not None:
            return None
        self._begin(position, EntryKind.ATTRIBUTES, "attributes")
        entry = self._new_entry(
            position,
            EntryKind.ATTRIBUTES,
            "attributes",
            status=EntryStatus.COMPLETED,
            result=dict(attributes),
        )
        self.store.record(entry, attributes=dict(attributes))
        self.journal[position] = entry
        return None


ATTRIBUTE_TYPES = (str, int, float, bool, type(None))
MAX_ATTRIBUTE_NAME = 64
MAX_ATTRIBUTE_TEXT = 1000


def check_attribute_name(name) -> str:
    """An identifier, short, without "__" (a name the run list can filter on)."""
    if (
        not isinstance(name, str)
        or not name.isidentifier()
        or "__" in name
        or len(name) > MAX_ATTRIBUTE_NAME
    ):
        raise ValueError(
            f"search attribute name {name!r} must be an identifier of at most "
            f"{MAX_ATTRIBUTE_NAME} characters without a double underscore"
        )
    return name


def check_attributes(attributes: dict) -> None:
    """Search attributes are JSON scalars under short names: a TypeError (or ValueError)
    in the body, before anything is journaled."""
    for name, value in attributes.items():
        check_attribute_name(name)
        if not isinstance(value, ATTRIBUTE_TYPES):
            raise TypeError(
                f"search attribute {name!r} must be a JSON scalar (str, int, float, "
                f"bool or None), not {type(value).__name__}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"search attribute {name!r} must be a finite number, not {value!r}")
        if isinstance(value, str) and (len(value) > MAX_ATTRIBUTE_TEXT or "\x00" in value):
            raise ValueError(
                f"search attribute {name!r} must be text of at most "
                f"{MAX_ATTRIBUTE_TEXT} characters without NUL"
            )


_STEP_FIELDS = ("status", "result", "error", "attempt", "wake_at", "started_at")
