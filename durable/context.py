"""The replay context: what ``workflow.step``, ``wait_for_signal`` & co. do inside a run.

Each durable call takes the next journal position. If the journal has an entry there,
the call must match it (kind and name) and returns what it recorded; otherwise the call
is performed now and recorded before the body goes on. No I/O happens here except
through the lease's fenced journal writes.
"""
import contextvars
import inspect
import random as random_module
import traceback
import uuid
from dataclasses import dataclass
from datetime import datetime

from durable import clock, codec
from durable.durations import as_timedelta
from durable.errors import Divergence, PayloadError, StepFailed, Suspend
from durable.leases import store_errors
from durable.models import EntryKind, EntryStatus, JournalEntry, Signal
from durable.retry import DEFAULT_RETRY, Retry

_current: contextvars.ContextVar["ReplayContext | None"] = contextvars.ContextVar(
    "durable_replay_context", default=None)
_current_step: contextvars.ContextVar["StepInfo | None"] = contextvars.ContextVar(
    "durable_current_step", default=None)


@dataclass(frozen=True)
class StepInfo:
    """What a running step may know about itself (its key is how receivers dedupe)."""

    run_id: str
    position: int
    name: str
    attempt: int
    idempotency_key: str


def current() -> "ReplayContext | None":
    return _current.get()


def current_step() -> StepInfo | None:
    return _current_step.get()


def describe(entry_or_kind, name=None) -> str:
    if isinstance(entry_or_kind, JournalEntry):
        return f"{entry_or_kind.kind} {entry_or_kind.name!r}"
    return f"{entry_or_kind} {name!r}"


_accepts_key_cache: dict = {}


def _accepts_idempotency_key(fn) -> bool:
    cached = _accepts_key_cache.get(fn)
    if cached is None:
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        cached = "idempotency_key" in params
        _accepts_key_cache[fn] = cached
    return cached


def error_of(exc: BaseException) -> dict:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
    }


class ReplayContext:
    def __init__(self, run, lease, journal: dict[int, JournalEntry]):
        self.run = run
        self.lease = lease
        self.journal = journal
        self.position = 0
        self._signals: list[Signal] | None = None

    # --- bookkeeping ---

    def _next(self, kind: str, name: str) -> tuple[int, JournalEntry | None]:
        position = self.position
        self.position += 1
        entry = self.journal.get(position)
        if entry is not None and (entry.kind != kind or entry.name != name):
            raise Divergence(
                f"journal mismatch at position {position}: the code asks for "
                f"{describe(kind, name)} but the journal recorded {describe(entry)}"
            )
        return position, entry

    def _new_entry(self, position: int, kind: str, name: str, **fields) -> JournalEntry:
        now = clock.now()
        entry = JournalEntry(run_id=self.run.id, position=position, kind=kind, name=name,
                             created_at=now, updated_at=now, **fields)
        return entry

    def _record(self, entry: JournalEntry, *, insert: bool, fields=(), also=()) -> JournalEntry:
        self.lease.write(entry, insert=insert, fields=fields, also=also)
        self.journal[entry.position] = entry
        return entry

    def check_fully_replayed(self) -> None:
        if self.journal and max(self.journal) >= self.position:
            entry = self.journal[self.position]
            raise Divergence(
                f"journal mismatch at position {self.position}: the code has finished but the "
                f"journal recorded {describe(entry)} there"
            )

    # --- deterministic values ---

    def _recorded_value(self, kind: str, produce, hint):
        position, entry = self._next(kind, kind)
        if entry is None:
            entry = self._new_entry(position, kind, kind, status=EntryStatus.COMPLETED,
                                    result=codec.encode(produce()))
            self._record(entry, insert=True)
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
        entry = self._new_entry(self.position, EntryKind.PATCH, change_id, status=EntryStatus.COMPLETED)
        self.position += 1
        self._record(entry, insert=True)
        return True

    # --- steps ---

    def step(self, fn, *args, idempotency_key=None, name=None, retry: Retry | None = None,
             atomic: bool = False, **kwargs):
        name = name or getattr(fn, "__name__", None) or repr(fn)
        position, entry = self._next(EntryKind.STEP, name)
        hint = codec.return_hint(fn)
        if entry is not None:
            if entry.status == EntryStatus.COMPLETED:
                return codec.decode(entry.result, hint)
            if entry.status == EntryStatus.FAILED:
                raise StepFailed(name, entry.error.get("type", "Error"),
                                 entry.error.get("message", ""), entry.attempt)
            if entry.status == EntryStatus.RETRYING and entry.wake_at and clock.now() < entry.wake_at:
                raise Suspend(entry.wake_at, f"retry:{name}")
        key = idempotency_key or f"{self.run.id}:{position}:{name}"
        if entry is None:
            entry = self._new_entry(position, EntryKind.STEP, name, status=EntryStatus.RETRYING,
                                    idempotency_key=key[:255])
            insert = True
        else:
            insert = False
        entry.attempt += 1
        entry.started_at = clock.now()
        if _accepts_idempotency_key(fn):
            kwargs["idempotency_key"] = key
        info = StepInfo(self.run.id, position, name, entry.attempt, key)
        policy = retry or DEFAULT_RETRY
        fields = ("status", "result", "error", "attempt", "wake_at", "started_at")
        outcome = {}

        def perform():
            outcome["encoded"] = codec.encode(fn(*args, **kwargs))
            entry.status, entry.result, entry.error, entry.wake_at = (
                EntryStatus.COMPLETED, outcome["encoded"], None, None)

        token = _current_step.set(info)
        try:
            if atomic:  # the step's own writes commit with its journal entry, or not at all
                self._record(entry, insert=insert, fields=fields, also=[perform])
            else:
                perform()
                self._record(entry, insert=insert, fields=fields)
        except Exception as exc:
            if isinstance(exc, PayloadError) or not policy.should_retry(exc, entry.attempt):
                entry.status, entry.error, entry.wake_at = EntryStatus.FAILED, error_of(exc), None
                self._record(entry, insert=insert, fields=fields)
                raise StepFailed(name, type(exc).__name__, str(exc), entry.attempt) from exc
            entry.status, entry.error = EntryStatus.RETRYING, error_of(exc)
            entry.wake_at = clock.now() + policy.delay_after(entry.attempt)
            self._record(entry, insert=insert, fields=fields)
            raise Suspend(entry.wake_at, f"retry:{name}") from exc
        finally:
            _current_step.reset(token)
        return codec.decode(outcome["encoded"], hint)

    # --- waits ---

    def _pending_signals(self) -> list[Signal]:
        if self._signals is None:
            with store_errors():
                self._signals = list(Signal.objects.filter(
                    run_id=self.run.id, consumed_position__isnull=True).order_by("id"))
        return self._signals

    def reload_signals(self) -> None:
        self._signals = None

    def wait_for_signal(self, name: str, timeout=None, type=None):
        position, entry = self._next(EntryKind.SIGNAL, name)
        if entry is not None and entry.status == EntryStatus.COMPLETED:
            if entry.result.get("timed_out"):
                return None
            return codec.decode(entry.result.get("payload"), type)
        now = clock.now()
        if entry is None:
            timeout = as_timedelta(timeout)
            deadline = now + timeout if timeout is not None else None
        else:
            deadline = entry.wake_at
        insert = entry is None
        if insert:
            entry = self._new_entry(position, EntryKind.SIGNAL, name, status=EntryStatus.WAITING,
                                    wake_at=deadline, started_at=now)
        signal = next((s for s in self._pending_signals() if s.name == name), None)
        fields = ("status", "result", "wake_at")
        if signal is not None:
            def consume():
                taken = Signal.objects.filter(pk=signal.pk, consumed_position__isnull=True).update(
                    consumed_position=position, consumed_at=now)
                if not taken:
                    raise Divergence(f"signal {signal.pk} ({name!r}) was consumed by another position")

            entry.status = EntryStatus.COMPLETED
            entry.result = {"signal_id": signal.pk, "payload": signal.payload}
            self._record(entry, insert=insert, fields=fields, also=[consume])
            self._signals.remove(signal)
            return codec.decode(signal.payload, type)
        if deadline is not None and now >= deadline:
            entry.status, entry.result = EntryStatus.COMPLETED, {"timed_out": True}
            self._record(entry, insert=insert, fields=fields)
            return None
        if insert:
            self._record(entry, insert=True)
        raise Suspend(deadline, f"signal:{name}")

    def sleep(self, duration) -> None:
        duration = as_timedelta(duration)
        position, entry = self._next(EntryKind.SLEEP, "sleep")
        if entry is not None and entry.status == EntryStatus.COMPLETED:
            return None
        now = clock.now()
        if entry is None:
            entry = self._new_entry(position, EntryKind.SLEEP, "sleep", status=EntryStatus.WAITING,
                                    wake_at=now + duration, started_at=now)
            if duration.total_seconds() > 0:
                self._record(entry, insert=True)
                raise Suspend(entry.wake_at, "sleep")
            entry.status = EntryStatus.COMPLETED
            self._record(entry, insert=True)
            return None
        if now < entry.wake_at:
            raise Suspend(entry.wake_at, "sleep")
        entry.status = EntryStatus.COMPLETED
        self._record(entry, insert=False, fields=("status",))
        return None
