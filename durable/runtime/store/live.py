"""The live store: every statement that changes a run's rows, in one place.

The replay context's store (``LiveStore``, held while a worker has a run's lease), the
claim that gives one, the sender's wake and signal, the sweep's pick, and the limit
tickets a step takes and gives back. Apps and ``durable.services`` never write a run's
rows themselves: they call these.

A worker that lost its lease (paused, partitioned, cancelled under it) finds its token
stale on the next write and stops with ``Fenced``; nothing it does is recorded. No row
lock outlives a statement or a commit: a worker frozen in the middle of a step holds
nothing another worker or a sender would wait for.
"""

import hashlib
import logging
import math
import os
import secrets
import socket
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import (
    DatabaseError,
    IntegrityError,
    InterfaceError,
    OperationalError,
    connection,
    transaction,
)
from django.db.models import F, JSONField, Q, Value
from django.db.models.expressions import CombinedExpression

from durable import chain, clock, codec, conf, sql
from durable.errors import (
    Divergence,
    Fenced,
    RunArchived,
    RunConflict,
    RunFinished,
    RunNotFound,
    StoreUnavailable,
)
from durable.locks import advisory_xact_lock
from durable.models import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    ArchivedAuditEvent,
    ArchivedJournalEntry,
    ArchivedRun,
    ArchivedSignal,
    AuditAction,
    AuditEvent,
    EntryKind,
    EntryStatus,
    JournalEntry,
    LimitTicket,
    RunStatus,
    Signal,
    TicketState,
    WorkflowRun,
)
from durable.runtime import children, forks
from durable.runtime.dispatch import dispatch
from durable.runtime.limits import Limit
from durable.runtime.priorities import DEFAULT_PRIORITY, MAX_PRIORITY
from durable.runtime.store import Store

log = logging.getLogger(__name__)

# Back-offs before re-sending a journal write whose connection died: the step's effect
# already happened, so giving the run up would make the next holder repeat it.
WRITE_RETRY_DELAYS = (0.1, 0.4, 1.0)
# What a recorded entry's later outcome may change (a wait that ended, a step's next attempt):
# its kind, name and position never change.
OUTCOME_FIELDS = ("status", "result", "error", "attempt", "wake_at", "started_at", "updated_at")

# pg_advisory_xact_lock(class, object) of a limit's line: the class keeps our locks apart
# from anyone else's.
LIMIT_LOCK_CLASS = 0x64757261  # "dura"


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


@dataclass(frozen=True)
class Settlement:
    """Where an advance leaves the run: one fenced UPDATE (``LiveStore.settle``).

    Built by the constructors below, one per way an advance ends, so the executor names
    what happened and the store alone knows which columns that writes.
    """

    transition: str
    wake_at: datetime | None = None
    waiting_for: str = ""
    fields: dict = field(default_factory=dict)
    # A park only holds if no signal arrived since the claim (else: replay with it).
    unless_signalled: bool = False
    # continue_as_new: the run created in the same transaction (not saved yet).
    successor: WorkflowRun | None = None
    successor_queue: str | None = None

    @classmethod
    def park(cls, wake_at: datetime | None, waiting_for: str) -> "Settlement":
        return cls("suspend", wake_at, waiting_for, unless_signalled=True)

    @classmethod
    def release(cls, wake_at: datetime, waiting_for: str = "") -> "Settlement":
        """Give the run back unfinished: the sweep (or a message) resumes it at ``wake_at``."""
        return cls("release", wake_at, waiting_for)

    @classmethod
    def complete(cls, result) -> "Settlement":
        return cls("complete", fields={"result": result, "error": None})

    @classmethod
    def fail(cls, error: dict) -> "Settlement":
        return cls("fail", fields={"error": error})

    @classmethod
    def block(cls, error: dict) -> "Settlement":
        """Stop until an operator acts: the code no longer fits the run."""
        return cls("block", fields={"error": error})

    @classmethod
    def cancel(cls, result, error: dict) -> "Settlement":
        return cls("cancel", fields={"result": result, "error": error, "cancel_request": None})

    @classmethod
    def continue_as_new(cls, run: WorkflowRun, definition, encoded_input: dict) -> "Settlement":
        """End ``run`` as ``continued`` and start its successor: the same workflow at its latest
        version, ``encoded_input``, an empty journal, the run's parent, under the id
        ``<first run of the chain>~<n>``."""
        root = run.chain_root or run.id
        generation = int(run.id.rsplit("~", 1)[1]) + 1 if run.chain_root else 2
        successor_id = _bounded_id(root, f"~{generation}")
        now = clock.now()
        successor = WorkflowRun(
            id=successor_id,
            workflow_name=definition.name,
            workflow_version=definition.version,
            input=encoded_input,
            parent_id=run.parent_id,
            chain_root=root,
            priority=run.priority,
            created_at=now,
            updated_at=now,
            wake_at=_grace(),
        )
        return cls(
            "continue_as_new",
            fields={
                "result": {"continued_as": successor_id},
                "error": None,
                "continued_as": successor_id,
            },
            successor=successor,
            successor_queue=definition.queue,
        )


@dataclass(frozen=True)
class Woken:
    """A park that lost its race with a signal: the run stays claimed, and this is what
    the row says now (a graceful cancel may have come with it)."""

    signal_seq: int
    cancel_request: dict | None


@dataclass
class LiveStore(Store):
    run_id: str
    owner: str
    token: int
    seconds: float
    signal_seq: int
    # Set once the run is parked or finished by this holder: a heartbeat that fails after
    # that is no news.
    done: bool = False
    # monotonic() time after which the heartbeat stops keeping a step with a timeout.
    step_deadline: float | None = field(default=None, repr=False)

    # --- the store interface (durable.runtime.store) ---

    def load(self) -> dict[int, JournalEntry]:
        with store_errors():
            return {entry.position: entry for entry in journal_of(self.run_id)}

    def pending_signals(self) -> list[Signal]:
        with store_errors():
            return pending_signals_of(self.run_id)

    def step_running(self, deadline: datetime | None) -> None:
        if deadline is None:
            self.step_deadline = None
        else:
            self.step_deadline = time.monotonic() + (deadline - clock.now()).total_seconds()

    def record(self, entry: JournalEntry, *, effect=None, consume=(), attributes=None) -> None:
        entry.updated_at = clock.now()
        insert = entry.pk is None
        if effect is not None:
            return self._record_with_effect(entry, effect, consume, attributes)
        for delay in (*WRITE_RETRY_DELAYS, None):
            try:
                return self._write(entry, consume, attributes)
            except StoreUnavailable as exc:
                if delay is None or connection.in_atomic_block:
                    raise
                log.warning(
                    "run %s: journal write at position %s failed (%s); retrying on a "
                    "fresh connection",
                    self.run_id,
                    entry.position,
                    first_line(exc),
                )
                connection.close()
                time.sleep(delay)
                if insert and self._landed(entry):
                    return None

    def start_child(
        self,
        entry: JournalEntry,
        definition,
        args,
        kwargs,
        child_id: str,
        priority: int = DEFAULT_PRIORITY,
    ) -> None:
        self.record(
            entry,
            effect=lambda: start_child_run(
                self.run_id, definition, args, kwargs, child_id, priority
            ),
        )

    def acquire_limit(
        self, limit, key: str, position: int, queue: str, priority: int = DEFAULT_PRIORITY
    ):
        with store_errors():
            return _take_ticket(self, limit, key, position, queue, priority)

    def release_limit(self, limit, key: str, position: int) -> None:
        with store_errors():
            _return_ticket(self, limit, key, position)

    # --- writes ---

    def _write(self, entry: JournalEntry, consume, attributes) -> None:
        if (
            entry.pk is None
            and not consume
            and attributes is None
            and connection.vendor == "postgresql"
        ):
            return self._insert_in_one_statement(entry)
        try:
            with _unsaved_unless_committed(entry), transaction.atomic():
                self._write_fenced(entry, consume, attributes)
        except IntegrityError as exc:  # another worker wrote this position: we are the stale one
            raise Fenced(self.run_id) from exc
        except DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def _record_with_effect(self, entry, effect, consume, attributes) -> None:
        """An atomic step: its body's writes, then the fence and the entry, in one transaction.

        The fence comes last, so the run row is locked only between it and the commit; a
        frozen body holds no lock on our tables, and on PostgreSQL the server ends a
        transaction left idle for longer than the lease (its writes roll back).

        A failure of the database is never the step's failed attempt: opening the
        transaction, saving the entry and committing are the engine's statements, and in
        the body only a lost connection is (the step's own failed statement counts, and so
        does a constraint of its own rows checked at commit, such as a deferred foreign key).
        """
        phase = "opening"
        try:
            with _unsaved_unless_committed(entry), transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(_LIMIT_IDLE_SQL, [self._idle_limit()])
                phase = "body"
                try:
                    effect()
                except DatabaseError as exc:
                    # Asked here, before the failed block closes a broken connection: was it
                    # the database that failed (not counted), or the step's own statement?
                    if _connection_lost():
                        raise StoreUnavailable(str(exc)) from exc
                    raise
                phase = "saving"
                self._write_fenced(entry, consume, attributes)
                phase = "committing"
        except IntegrityError as exc:
            if phase == "saving":  # another worker wrote this position: we are the stale one
                raise Fenced(self.run_id) from exc
            if phase == "opening":
                raise StoreUnavailable(str(exc)) from exc
            raise  # the body's own, in its statement or checked at commit
        except DatabaseError as exc:
            if phase != "body":
                raise StoreUnavailable(str(exc)) from exc
            raise

    def _write_fenced(self, entry, consume, attributes) -> None:
        """Inside the caller's transaction: the fence, then the entry and what commits with it."""
        self._fence()
        if consume:
            self._consume(consume, entry.position)
        self._save(entry)
        if attributes is not None:
            self._merge_attributes(attributes)

    def _fence(self) -> None:
        """Inside a transaction: check the token and hold the run row until commit.

        FOR SHARE (PostgreSQL) blocks a claim or a cancel from bumping the token until we
        commit, without writing a new version of the run row; SQLite's IMMEDIATE
        transactions already hold the write lock. On PostgreSQL the same statement limits
        how long the transaction may then sit idle to the lease: a worker frozen or cut
        off between the fence and its commit would otherwise hold the row, and no other
        worker could ever take the run.
        """
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(
                    _FENCE_AND_LIMIT_IDLE_SQL, [self._idle_limit(), self.run_id, self.token]
                )
            else:
                cursor.execute(_fence_sql(), [self.run_id, self.token])
            if cursor.fetchone() is None:
                raise Fenced(self.run_id)

    def _idle_limit(self) -> str:
        return f"{max(int(self.seconds * 1000), 1)}ms"

    def _consume(self, signals: list[Signal], position: int) -> None:
        ids = [signal.pk for signal in signals]
        taken = Signal.objects.filter(pk__in=ids, consumed_position__isnull=True).update(
            consumed_position=position, consumed_at=clock.now()
        )
        if taken != len(ids):
            raise Divergence(
                f"signals {ids} ({', '.join(sorted({s.name for s in signals}))}): "
                "one was consumed by another position"
            )

    def _merge_attributes(self, attributes: dict) -> None:
        """Inside the fenced transaction: set these search attributes, keep the others.

        PostgreSQL merges in the statement (jsonb ||); SQLite reads, merges and writes,
        which is safe because only the lease holder writes a run's attributes and its
        IMMEDIATE transaction holds the write lock."""
        query = WorkflowRun.objects.filter(pk=self.run_id)
        if connection.vendor == "postgresql":
            query.update(
                attributes=CombinedExpression(
                    F("attributes"),
                    "||",
                    Value(attributes, output_field=JSONField()),
                    output_field=JSONField(),
                )
            )
            return
        current = query.values_list("attributes", flat=True).first() or {}
        query.update(attributes={**current, **attributes})

    @staticmethod
    def _save(entry: JournalEntry) -> None:
        if entry.pk is None:
            entry.save(force_insert=True)
        else:
            entry.save(update_fields=OUTCOME_FIELDS)

    def _landed(self, entry: JournalEntry) -> bool:
        """After a lost connection: did our insert commit before the connection died?

        Only while the fencing token is still ours: an entry at this position under a newer
        token is the new holder's, and taking it for ours would run the next step's effect
        after the run moved on. Fenced then, whether or not our own insert had landed.
        """
        journal, runs = JournalEntry._meta.db_table, WorkflowRun._meta.db_table
        with store_errors(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT entry.id FROM {runs} AS run LEFT JOIN {journal} AS entry "
                "ON entry.run_id = run.id "
                f"AND entry.position = %s AND entry.status = %s AND entry.attempt = %s "
                f"WHERE run.id = %s AND run.fencing_token = %s",
                [entry.position, entry.status, entry.attempt, self.run_id, self.token],
            )
            row = cursor.fetchone()
        if row is None:
            raise Fenced(self.run_id)
        if row[0] is None:
            return False
        entry.pk = row[0]
        entry._state.adding = False
        return True

    def _insert_in_one_statement(self, entry: JournalEntry) -> None:
        """Fence and insert in one round trip, the common case of every step on PostgreSQL:
        the entry is inserted only if the token still matches, under a row lock."""
        entry.created_at = entry.created_at or entry.updated_at
        columns = [f for f in JournalEntry._meta.concrete_fields if not f.primary_key]
        values = [f.get_db_prep_save(getattr(entry, f.attname), connection) for f in columns]
        statement = _FENCED_INSERT_SQL.get(len(columns))
        if statement is None:
            statement = _FENCED_INSERT_SQL[len(columns)] = (
                f"WITH fence AS ({_fence_sql()}) "
                f"INSERT INTO {JournalEntry._meta.db_table} "
                f"({', '.join(f.column for f in columns)}) "
                f"SELECT {', '.join(['%s'] * len(columns))} FROM fence RETURNING id"
            )
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement, [self.run_id, self.token, *values])
                row = cursor.fetchone()
        except IntegrityError as exc:
            raise Fenced(self.run_id) from exc
        except DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc
        if row is None:
            raise Fenced(self.run_id)
        entry.pk = row[0]
        entry._state.adding = False

    # --- the run row ---

    def settle(self, run: WorkflowRun, settlement: Settlement) -> Woken | None:
        """Leave the run as ``settlement`` says if we still hold the lease (Fenced if not),
        and apply the transition to ``run`` after the write.

        A park (``unless_signalled``) that finds a signal arrived since the claim writes
        nothing and returns what the row holds now: the caller replays with the signal.
        """
        status = run.status_after(settlement.transition)
        now = clock.now()
        values = dict(
            status=status,
            lease_owner="",
            lease_expires_at=None,
            wake_at=settlement.wake_at,
            waiting_for=settlement.waiting_for,
            updated_at=now,
            recoveries=0,
            recovery_position=None,
            **settlement.fields,
        )
        if status in FINISHED_STATUSES:
            values["finished_at"] = now
        with store_errors():
            if settlement.successor is not None:
                woken = self._continue(
                    run, values, settlement.successor, settlement.successor_queue
                )
            elif run.parent_id and status in FINISHED_STATUSES:
                woken = self._finish_child(run, values)
            else:
                woken = self._persist(values, settlement.unless_signalled)
        if woken is None:
            getattr(run, settlement.transition)()
            self.done = True
        return woken

    def _finish_child(self, run: WorkflowRun, values: dict) -> None:
        """A child's end and the signal that tells its parent commit together."""
        with transaction.atomic():
            if connection.vendor == "postgresql":  # two statements: never idle past the lease
                with connection.cursor() as cursor:
                    cursor.execute(_LIMIT_IDLE_SQL, [self._idle_limit()])
            self._persist(values, False)
            notify_parent(
                run, status=values["status"], result=values.get("result"), error=values.get("error")
            )

    def _continue(
        self, run: WorkflowRun, values: dict, successor: WorkflowRun, queue: str | None
    ) -> None:
        """The run's end and its successor's start commit together. What was asked of the
        run goes on to the successor: the signals it had not taken, a graceful cancel asked
        during this advance (read under the row lock the fenced end took), and its children
        still running (their outcomes and a cancel follow the chain); a parent is told only
        when the chain ends. RunConflict, writing nothing, when the successor's id is taken."""
        with transaction.atomic():
            if connection.vendor == "postgresql":  # several statements: never idle past the lease
                with connection.cursor() as cursor:
                    cursor.execute(_LIMIT_IDLE_SQL, [self._idle_limit()])
            self._persist(values, False)
            successor.cancel_request = (
                WorkflowRun.objects.filter(pk=run.id)
                .values_list("cancel_request", flat=True)
                .first()
            )
            detail = {
                "continued_from": run.id,
                "chain_root": successor.chain_root,
                "workflow": successor.workflow_name,
                "version": successor.workflow_version,
            }
            if not create_run(
                successor, actor=f"run:{run.id}", detail=detail, action=AuditAction.CONTINUE_AS_NEW
            ):
                raise RunConflict(
                    f"run {successor.id!r} exists already: run {run.id!r} cannot continue as it"
                )
            moved = Signal.objects.filter(run_id=run.id, consumed_position__isnull=True).update(
                run_id=successor.id
            )
            adopted = (
                WorkflowRun.objects.filter(parent_id=run.id)
                .exclude(status__in=FINISHED_STATUSES)
                .update(parent_id=successor.id)
            )
            audit(
                run.id,
                AuditAction.CONTINUE_AS_NEW,
                f"run:{run.id}",
                {
                    "continued_as": successor.id,
                    "signals_moved": moved,
                    "children_moved": adopted,
                    "cancel_carried": successor.cancel_request is not None,
                },
            )
        dispatch(successor.id, queue=queue, priority=successor.priority)

    def _persist(self, values: dict, unless_signalled: bool) -> Woken | None:
        if unless_signalled:
            if sql.update_row(
                WorkflowRun,
                self.run_id,
                values,
                fencing_token=self.token,
                signal_seq=self.signal_seq,
            ):
                return None
            current = (
                WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token)
                .values_list("signal_seq", "cancel_request")
                .first()
            )
            if current is None:
                raise Fenced(self.run_id)
            self.signal_seq = current[0]
            return Woken(*current)
        if not sql.update_row(WorkflowRun, self.run_id, values, fencing_token=self.token):
            raise Fenced(self.run_id)
        return None

    def note_recovery(self, position: int) -> None:
        """The first takeover at this journal length: count from one again."""
        with store_errors():
            WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token).update(
                recoveries=1, recovery_position=position
            )

    def extend(self, *, seconds: float | None = None, wait: bool = True) -> bool | None:
        """Heartbeat: push the expiry forward (``seconds``: the lease's new length, from now
        on); False if the lease is gone.

        ``wait=False`` (the heartbeat thread, on PostgreSQL) returns None at once when
        another transaction holds the run row (a sender's open transaction after
        ``signal_send``): one thread extends every lease of its process, and must not
        stall behind one locked row while the others expire.
        """
        if seconds is not None:
            self.seconds = seconds
        expires = clock.now() + timedelta(seconds=self.seconds)
        # Only while the run is still ours and running: a heartbeat that lands just after
        # the run was parked or finished must not give it a lease (and a wake time) again.
        ours = WorkflowRun.objects.filter(
            pk=self.run_id, fencing_token=self.token, status=RunStatus.RUNNING
        )
        if wait or not connection.features.has_select_for_update_skip_locked:
            return bool(ours.update(lease_expires_at=expires, wake_at=expires))
        dt = WorkflowRun._meta.get_field("lease_expires_at")
        expires = dt.get_db_prep_save(expires, connection)
        with connection.cursor() as cursor:  # one statement: atomic without a transaction block
            cursor.execute(
                _EXTEND_UNLESS_LOCKED_SQL,
                [expires, expires, self.run_id, self.token, RunStatus.RUNNING],
            )
            if cursor.fetchone() is not None:
                return True
        return None if ours.exists() else False  # a plain read never waits for a lock


_EXTEND_UNLESS_LOCKED_SQL = (
    f"UPDATE {WorkflowRun._meta.db_table} SET lease_expires_at = %s, wake_at = %s WHERE id = ("
    f"SELECT id FROM {WorkflowRun._meta.db_table} WHERE id = %s AND fencing_token = %s "
    "AND status = %s "
    f"FOR NO KEY UPDATE SKIP LOCKED) RETURNING 1"
)


_FENCED_INSERT_SQL: dict[int, str] = {}


@contextmanager
def _unsaved_unless_committed(entry: JournalEntry):
    """Inside a transaction that inserts ``entry``: if it rolls back, the entry is new again
    (the next ``record`` of it inserts; an UPDATE would find no row)."""
    new = entry.pk is None
    try:
        yield
    except BaseException:
        if new:
            entry.pk, entry._state.adding = None, True
        raise


@contextmanager
def store_errors():
    """Turn a failed statement on the engine's own rows into StoreUnavailable."""
    try:
        yield
    except DatabaseError as exc:
        raise StoreUnavailable(str(exc)) from exc


def _connection_lost() -> bool:
    """Whether this thread's connection is gone (psycopg marks it closed or broken; an
    SQLite connection is never lost this way)."""
    raw = connection.connection
    return raw is None or bool(getattr(raw, "closed", False)) or bool(getattr(raw, "broken", False))


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def on_live_connection(operation):
    """Run ``operation``; if the connection was killed while idle, reopen it and run it once
    more. Outside a transaction only: inside one, the caller's work is gone with it."""
    try:
        return operation()
    except (OperationalError, InterfaceError):
        if connection.in_atomic_block:
            raise
        connection.close()
        return operation()


def _fence_sql() -> str:
    lock = " FOR SHARE" if connection.vendor == "postgresql" else ""
    return f"SELECT 1 FROM {WorkflowRun._meta.db_table} WHERE id = %s AND fencing_token = %s{lock}"


# SET LOCAL as a function, so it can ride in the fence's own statement.
_LIMIT_IDLE_SQL = "SELECT set_config('idle_in_transaction_session_timeout', %s, true)"
_FENCE_AND_LIMIT_IDLE_SQL = (
    "SELECT set_config('idle_in_transaction_session_timeout', %s, true) "
    f"FROM {WorkflowRun._meta.db_table} "
    f"WHERE id = %s AND fencing_token = %s FOR SHARE"
)


def claim(
    run_id: str,
    *,
    owner: str | None = None,
    lease_seconds: float | None = None,
    advances: int | None = None,
):
    """Take the run if it is runnable and nobody holds a live lease on it.

    Returns ``(run, lease)`` or None. One UPDATE ... RETURNING: the condition is the claim
    transition's sources (a RUNNING run only once its lease has expired, which counts as a
    recovery). Bumping the fencing token here is what makes the previous holder's next
    write fail.

    ``advances``: the run's count of advances when the sweep sent this message. A run
    advanced since, and not due now, is left alone: the message is a copy the sweep sent
    while an earlier one waited behind a backlog, and replaying the run for it would only
    park it again (under a backlog, most of what a worker did).
    """
    owner = (owner or default_owner())[:255]
    seconds = lease_seconds or conf.lease_seconds()
    return on_live_connection(lambda: _claim(run_id, owner, seconds, advances))


def _claim(run_id: str, owner: str, seconds: float, advances: int | None = None):
    now = clock.now()
    expires = now + timedelta(seconds=seconds)
    waiting = [status for status in WorkflowRun.sources_of("claim") if status != RunStatus.RUNNING]
    fields = list(WorkflowRun._meta.concrete_fields)
    statement = (
        f"UPDATE {WorkflowRun._meta.db_table} "
        "SET status = %s, lease_owner = %s, lease_expires_at = %s, wake_at = %s, "
        "fencing_token = fencing_token + 1, advances = advances + 1, resends = 0, "
        "updated_at = %s, "
        f"recoveries = CASE WHEN status = %s THEN recoveries + 1 ELSE 0 END, "
        f"takeovers = takeovers + CASE WHEN status = %s THEN 1 ELSE 0 END "
        f"WHERE id = %s AND (status IN ({', '.join(['%s'] * len(waiting))}) OR (status = %s AND "
        f"(lease_expires_at IS NULL OR lease_expires_at <= %s))) "
        + ("AND (advances = %s OR wake_at <= %s) " if advances is not None else "")
        + f"RETURNING {', '.join(f.column for f in fields)}"
    )
    dt = WorkflowRun._meta.get_field("lease_expires_at")
    params = [
        RunStatus.RUNNING,
        owner,
        dt.get_db_prep_save(expires, connection),
        dt.get_db_prep_save(expires, connection),
        dt.get_db_prep_save(now, connection),
        RunStatus.RUNNING,
        RunStatus.RUNNING,
        run_id,
        *waiting,
        RunStatus.RUNNING,
        dt.get_db_prep_save(now, connection),
    ]
    if advances is not None:
        params += [advances, dt.get_db_prep_save(now, connection)]
    with connection.cursor() as cursor:  # one statement: atomic without a transaction block
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run = sql.instances(WorkflowRun, fields, [row])[0]
    return run, LiveStore(
        run_id=run_id,
        owner=owner,
        token=run.fencing_token,
        seconds=seconds,
        signal_seq=run.signal_seq,
    )


# --- the run row, for a sender or the sweep (no lease) ---


def wake_runs(run_ids, *, now, by, **also) -> int:
    """Wake the unfinished runs among ``run_ids``: the one "wake the run" write of the engine.

    ``signal_seq`` goes up, so a worker about to park one of them (``LiveStore.settle`` with
    ``Settlement.park``) looks again and no wake-up is lost; ``wake_at`` comes forward to
    ``by`` unless it is sooner, so the sweep finds the run should its message be lost.
    ``also``: other columns to set in the same statement (a graceful cancel's request).
    Returns how many runs were woken. The caller dispatches them after commit."""
    run_ids = list(run_ids)
    if not run_ids:
        return 0
    statement, params = _wake_statement(run_ids, now=now, by=by, **also)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def _wake_statement(run_ids: list, *, now, by, **also) -> tuple[str, list]:
    meta, quote = WorkflowRun._meta, connection.ops.quote_name
    at = meta.get_field("wake_at")
    fields = [meta.get_field(name) for name in also]
    sets = "".join(f", {quote(field.column)} = %s" for field in fields)
    statement = (
        f"UPDATE {quote(meta.db_table)} "
        "SET signal_seq = signal_seq + 1, resends = 0, updated_at = %s, "
        f"wake_at = CASE WHEN wake_at IS NULL OR wake_at > %s THEN %s ELSE wake_at END{sets} "
        f"WHERE id IN ({', '.join(['%s'] * len(run_ids))}) "
        f"AND status NOT IN ({', '.join(['%s'] * len(FINISHED_STATUSES))})"
    )
    now, by = at.get_db_prep_save(now, connection), at.get_db_prep_save(by, connection)
    values = [
        field.get_db_prep_save(value, connection) for field, value in zip(fields, also.values())
    ]
    return statement, [now, by, by, *values, *run_ids, *FINISHED_STATUSES]


def record_signal(signal, event, now, grace) -> int | None:
    """signal_send's writes: wake the unfinished run (bump ``signal_seq``, which locks the row,
    and bring ``wake_at`` forward to ``grace`` unless it is sooner) and, only if it was woken,
    insert ``signal`` and ``event``, its audit row, naming it (``signal_id`` in the detail) at
    the end of the run's audit chain. Returns the run's priority (its wake-up goes at it);
    None, with nothing written, when the run is finished or missing.

    On PostgreSQL one statement, which computes the audit row's link, digest and seal itself (the
    sender's call is a figure of issue 17): outside a transaction it needs no BEGIN or COMMIT.
    It reads the chain's head in its snapshot, taken before it waited for the run's row: a
    writer that held the row meanwhile appended a link it did not see, and the unique (run,
    chain_seq) constraint refuses the row (IntegrityError, nothing written). The caller then
    locks the run and calls again. SQLite allows no writes in a WITH, and serialises writers:
    there it is the UPDATE, the INSERT and the audit row's own save."""
    quote = connection.ops.quote_name
    wake, params = _wake_statement([signal.run_id], now=now, by=grace)
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"{wake} RETURNING priority", params)
            woken = cursor.fetchone()
        if woken is None:
            return None
        sql.insert(signal)
        event.detail = {**event.detail, "signal_id": signal.pk}
        event.save(parent_locked=True)
        return woken[0]

    signal_fields = [f for f in signal._meta.concrete_fields if not f.primary_key]
    signal_columns, signal_values = sql.saved(signal, signal_fields)
    audit = event._meta
    detail, seq = event.detail, event.chain_seq
    seq_hole, id_hole = (f"durable-hole-{secrets.token_hex(8)}" for _ in range(2))
    event.chain_seq, event.detail = seq_hole, {**detail, "signal_id": id_hole}
    head, middle, tail = chain.body_around(
        event, [seq_hole, id_hole], parent=event.chain_parent, fields=event.chained_fields
    )
    event.chain_seq, event.detail = seq, detail
    column = {
        name: quote(audit.get_field(name).column)
        for name in (
            event.chain_parent,
            "action",
            "actor",
            "detail",
            "created_at",
            "chain_seq",
            "prev_hash",
            "row_hash",
            "row_mac",
        )
    }
    sealed, seal_params = chain.seal_sql("digest.hash")
    statement = (
        f"WITH woken AS ({wake} RETURNING priority), "
        f"sent AS (INSERT INTO {quote(signal._meta.db_table)} ({signal_columns}) "
        f"SELECT {', '.join(['%s'] * len(signal_fields))} FROM woken "
        f"RETURNING {quote(signal._meta.pk.column)} AS id), "
        f"head AS (SELECT {column['chain_seq']} AS seq, {column['row_hash']} AS hash "
        f"FROM {quote(audit.db_table)} "
        f"WHERE {column[event.chain_parent]} = %s ORDER BY {column['chain_seq']} DESC LIMIT 1), "
        "link AS (SELECT sent.id, COALESCE(head.seq, 0) + 1 AS seq, "
        "COALESCE(head.hash, %s) AS prev "
        f"FROM sent LEFT JOIN head ON TRUE), "
        "digest AS (SELECT link.*, encode(sha256(convert_to("
        "link.prev || %s::text || link.seq::text || %s::text "
        f"|| link.id::text || %s::text, 'UTF8')), 'hex') AS hash FROM link) "
        f"INSERT INTO {quote(audit.db_table)} ({', '.join(column.values())}) "
        "SELECT %s, %s, %s, %s::jsonb || jsonb_build_object('signal_id', digest.id), %s, "
        f"digest.seq, digest.prev, digest.hash, {sealed} FROM digest "
        f"RETURNING ({column['detail']} ->> 'signal_id')::bigint, {quote(audit.pk.column)}, "
        f"{column['chain_seq']}, {column['prev_hash']}, {column['row_hash']}, {column['row_mac']}, "
        f"(SELECT priority FROM woken)"
    )
    created_at = audit.get_field("created_at")
    params += [
        *signal_values,
        signal.run_id,
        chain.GENESIS,
        "\n" + head,
        middle,
        tail,
        event.run_id,
        event.action,
        event.actor,
        audit.get_field("detail").get_db_prep_save(detail, connection),
        created_at.get_db_prep_save(event.created_at, connection),
        *seal_params,
    ]
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None
    (
        signal.pk,
        event.pk,
        event.chain_seq,
        event.prev_hash,
        event.row_hash,
        event.row_mac,
        priority,
    ) = row
    event.detail = {**detail, "signal_id": signal.pk}
    sql.stored(signal)
    sql.stored(event)
    return priority


def pick_due(
    horizon, until, limit: int, *, grace: timedelta = timedelta(0)
) -> list[tuple[str, object, str, str, int, int]]:
    """The sweep's pick: up to ``limit`` active runs whose ``wake_at`` is at or before
    ``horizon``, higher priority first and soonest first within one, their ``wake_at`` moved
    to ``until`` (so the next tick leaves them alone while their message is in flight).
    Returns (id, the wake_at it had, status, waiting_for, advances, priority): a running one
    is a takeover, its lease expired; one waiting for ``limit:...`` is a waiter whose turn in
    a limit's line has come; ``advances`` goes with the message, so a copy that arrives
    after the run moved on is not replayed (``claim``).

    A run picked again before any worker claimed it (its message queued behind a backlog,
    or lost) is sent again only after ``grace`` more, then three, seven, fifteen and at most
    thirty-one times ``grace`` more: under a backlog the sweep would otherwise resend every
    waiting message each grace period, and its copies would make the backlog longer still.
    A takeover is never held back.

    On PostgreSQL one statement (an UPDATE over a ``SELECT ... FOR UPDATE SKIP LOCKED``:
    two sweeps never pick one run), which outside a transaction needs no BEGIN or COMMIT: a
    tick that finds nothing is one round trip, every second. Elsewhere the SELECT, then the
    UPDATE, in the caller's transaction (SQLite serialises writers)."""
    at = WorkflowRun._meta.get_field("wake_at")
    later = [at.get_db_prep_save(until + grace * (2**n - 1), connection) for n in range(6)]
    horizon, until = (
        at.get_db_prep_save(horizon, connection),
        at.get_db_prep_save(until, connection),
    )
    table, statuses = (
        connection.ops.quote_name(WorkflowRun._meta.db_table),
        ", ".join(["%s"] * len(ACTIVE_STATUSES)),
    )
    due = (
        f"SELECT id, wake_at, status, waiting_for, advances, resends, priority FROM {table} "
        "WHERE wake_at <= %s "
        f"AND status IN ({statuses}) ORDER BY priority DESC, wake_at LIMIT %s"
    )
    moved = (
        "wake_at = CASE WHEN {run}status = %s THEN %s "
        + "".join(f"WHEN {{run}}resends = {n} THEN %s " for n in range(5))
        + "ELSE %s END, "
        "resends = CASE WHEN {run}resends < 32000 THEN {run}resends + 1 ELSE {run}resends END"
    )
    moved_params = [RunStatus.RUNNING, until, *later]
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(due, [horizon, *ACTIVE_STATUSES, limit])
            picked = [(*row[:5], row[6]) for row in cursor.fetchall()]
            if picked:
                cursor.execute(
                    f"UPDATE {table} SET {moved.format(run='')} "
                    f"WHERE id IN ({', '.join(['%s'] * len(picked))})",
                    [*moved_params, *(run_id for run_id, *_ in picked)],
                )
        else:
            cursor.execute(
                f"UPDATE {table} AS run SET {moved.format(run='due.')} "
                f"FROM ({due} FOR UPDATE SKIP LOCKED) AS due "
                "WHERE run.id = due.id "
                "RETURNING run.id, due.wake_at, due.status, due.waiting_for, "
                f"due.advances, due.priority",
                [*moved_params, horizon, *ACTIVE_STATUSES, limit],
            )
            picked = cursor.fetchall()
    expression = at.get_col(WorkflowRun._meta.db_table)
    converters = connection.ops.get_db_converters(expression)
    rows = []
    for run_id, wake_at, status, waiting_for, advances, priority in picked:
        for converter in converters:
            wake_at = converter(wake_at, expression, connection)
        rows.append((run_id, wake_at, status, waiting_for, advances, priority))
    return sorted(rows, key=lambda row: (-row[5], row[1]))


# --- a resume's reads ---


def journal_of(run_id: str) -> list:
    """The run's journal entries (a resume's first read)."""
    return sql.select(JournalEntry, "run_id = %s", [run_id])


def pending_signals_of(run_id: str) -> list:
    """The run's signals no wait has taken yet, oldest first (a resume's second read)."""
    return sql.select(Signal, "run_id = %s AND consumed_position IS NULL ORDER BY id", [run_id])


# --- limit tickets (the store takes and gives them back while it holds the run) ---
#
# Plain SQL, built once: a step takes its ticket under the limit's lock, so every
# millisecond of Python spent there is a millisecond every other worker waits (the ORM's
# query building cost 20 ms of a 37 ms take behind a line of a thousand waiters).

_TICKET_COLUMNS = ", ".join(f"t.{f.column}" for f in LimitTicket._meta.concrete_fields)
_TICKETS, _RUNS = LimitTicket._meta.db_table, WorkflowRun._meta.db_table
_ACTIVE = ", ".join(f"'{status}'" for status in ACTIVE_STATUSES)
# The ticket's run runs under the lease that took it (a held ticket's slot is live).
_HOLD_LIVE = (
    "r.status = 'running' AND r.fencing_token = t.fencing_token AND r.lease_expires_at > %s"
)
# Tickets that no longer count: released past the window, held by a lease that is gone.
_FORGET_SPENT_SQL = (
    f"DELETE FROM {_TICKETS} WHERE limit_name = %s AND limit_key = %s AND ("
    "(state = 'released' AND released_at <= %s) "
    "OR (state = 'held' AND granted_at <= %s AND NOT EXISTS ("
    f"SELECT 1 FROM {_RUNS} r WHERE r.id = {_TICKETS}.run_id AND r.status = 'running' "
    f"AND r.fencing_token = {_TICKETS}.fencing_token AND r.lease_expires_at > %s)))"
)
# The held and released tickets (a few per slot or token): whether each holds a slot.
_TAKEN_SQL = (
    "SELECT t.state, t.granted_at, t.released_at, "
    f"CASE WHEN t.state = 'held' AND {_HOLD_LIVE} THEN 1 ELSE 0 END "
    f"FROM {_TICKETS} t JOIN {_RUNS} r ON r.id = t.run_id "
    f"WHERE t.limit_name = %s AND t.limit_key = %s AND t.state IN ('held', 'released')"
)
# The head of the line, oldest first, each waiter with whether its run may still come: its
# run is active and has had less than patience to come back since its wake-up, or (still
# parked on this limit, or claimed since the cutoff) could not come back yet.
_LINE_SQL = (
    f"SELECT {_TICKET_COLUMNS}, "
    f"CASE WHEN r.status IN ({_ACTIVE}) AND (t.wake_at > %s OR (r.waiting_for = %s "
    f"AND (r.status <> 'running' OR r.updated_at > %s))) THEN 1 ELSE 0 END "
    f"FROM {_TICKETS} t JOIN {_RUNS} r ON r.id = t.run_id "
    f"WHERE t.limit_name = %s AND t.limit_key = %s AND t.state = 'waiting' "
    "AND (t.priority < %s OR (t.priority = %s "
    "AND (t.queued_at > %s OR (t.queued_at = %s AND t.id > %s)))) "
    f"ORDER BY t.priority DESC, t.queued_at, t.id LIMIT %s"
)
# How long the line is, up to a bound (an index-only count of at most that many rows).
_LINE_LENGTH_SQL = (
    f"SELECT COUNT(*) FROM (SELECT 1 FROM {_TICKETS} WHERE limit_name = %s AND limit_key = %s "
    f"AND state = 'waiting' LIMIT %s) AS line"
)
_LAST_WAITER_SQL = (
    f"SELECT wake_at FROM {_TICKETS} WHERE limit_name = %s AND limit_key = %s "
    "AND state = 'waiting' "
    f"ORDER BY priority, queued_at DESC, id DESC LIMIT 1"
)
_TICKET_WAKE_SQL = f"UPDATE {_TICKETS} SET wake_at = %s WHERE id = %s"
_TICKET_WAIT_SQL = f"UPDATE {_TICKETS} SET wake_at = %s, queue = %s WHERE id = %s"
_TICKET_GRANT_SQL = (
    f"UPDATE {_TICKETS} SET state = 'held', fencing_token = %s, queue = %s, granted_at = %s, "
    f"released_at = NULL, wake_at = NULL WHERE id = %s"
)
_TICKET_RELEASE_SQL = (
    f"UPDATE {_TICKETS} SET state = 'released', released_at = %s "
    f"WHERE run_id = %s AND position = %s AND state = 'held' AND fencing_token = %s"
)
_TICKET_RETURN_SQL = (
    f"DELETE FROM {_TICKETS} "
    f"WHERE run_id = %s AND position = %s AND state = 'held' AND fencing_token = %s"
)
_FAR_BACK = datetime(1970, 1, 1, tzinfo=UTC)
_TIME = LimitTicket._meta.get_field("wake_at")


def _at(value: datetime | None):
    return _TIME.get_db_prep_value(value, connection) if value is not None else None


def _time(value) -> datetime | None:
    """A datetime column's raw value, as the ORM would read it (SQLite keeps text)."""
    expression = _TIME.get_col(_TICKETS)
    for converter in connection.ops.get_db_converters(expression):
        value = converter(value, expression, connection)
    return value


@dataclass
class _Taken:
    """What the held and released tickets of a limit say now."""

    holding: int = 0  # slots held by live leases
    in_window: int = 0  # tokens a rate still counts
    ends: list = field(
        default_factory=list
    )  # when each counted token leaves the window, soonest first

    def add(self, other: int) -> "_Taken":
        """``other`` more holds (this step's own, just granted)."""
        return _Taken(self.holding + other, self.in_window + other, self.ends)


def _take_ticket(
    lease, declared: Limit, key: str, position: int, queue: str, priority: int = DEFAULT_PRIORITY
) -> datetime | None:
    """Take a slot or token for the step at ``position``: None when taken, else the time to
    come back (the caller's run waits until then, or until a holder or a grant calls it).

    Only the head of the line is read (``_reach`` waiters), so what a step costs under the
    limit's lock does not grow with the number of runs waiting behind it. Each grant calls
    the next waiter forward: the line moves at the limit's pace, however long it is. A
    newcomer behind a line twice as long as the head joins its back without the lock, so a
    burst of newcomers does not keep the head waiting for it."""
    now = clock.now()
    reach = _reach(declared)
    with connection.cursor() as cursor:
        cursor.execute(_LINE_LENGTH_SQL, [declared.name, key, 2 * reach + 1])
        long_line = cursor.fetchone()[0] > 2 * reach
        if long_line and not sql.select(
            LimitTicket, "run_id = %s AND position = %s", [lease.run_id, position]
        ):
            with transaction.atomic():  # a newcomer behind a long line takes its place at the back,
                lease._fence()  # without the limit's lock: nothing there is for it to take
                wake_at = _far_chance(cursor, declared, key, None, now)
                _new_ticket(lease, declared, key, position, queue, now, priority, wake_at=wake_at)
            return wake_at
    with transaction.atomic():
        _lock(declared.name, key)
        lease._fence()  # a worker that lost the run takes nothing
        with connection.cursor() as cursor:
            _forget_spent(cursor, declared, key, now)
            waiting = _mine(cursor, lease.run_id, position, declared, key, now)
            taken = _taken(cursor, declared, key, now)
            line = _line(cursor, declared, key, now, reach + 1)
            place = _place(line, waiting, reach, priority)
            if place is not None and place < _free(declared, taken):
                if waiting is None:
                    _new_ticket(lease, declared, key, position, queue, now, priority, held=True)
                else:
                    cursor.execute(_TICKET_GRANT_SQL, [lease.token, queue, _at(now), waiting.pk])
                others = [waiter for waiter in line if waiting is None or waiter.pk != waiting.pk]
                _call_forward(cursor, declared, others[:reach], taken.add(1), now)
                return None
            if place is not None:
                wake_at = _chances(declared, taken, now, [place])[0]
            else:
                wake_at = _far_chance(cursor, declared, key, waiting, now)
            if waiting is None:
                _new_ticket(lease, declared, key, position, queue, now, priority, wake_at=wake_at)
            else:
                cursor.execute(_TICKET_WAIT_SQL, [_at(wake_at), queue, waiting.pk])
            _call_forward(cursor, declared, line[:reach], taken, now, skip=waiting)
            return wake_at


def _new_ticket(
    lease,
    declared: Limit,
    key: str,
    position: int,
    queue: str,
    now,
    priority: int,
    *,
    held: bool = False,
    wake_at: datetime | None = None,
) -> None:
    """The step's first ticket: held from now under the lease's token, or waiting until
    ``wake_at``."""
    state = (
        {"state": TicketState.HELD, "fencing_token": lease.token, "granted_at": now}
        if held
        else {"state": TicketState.WAITING, "wake_at": wake_at}
    )
    sql.insert(
        LimitTicket(
            limit_name=declared.name,
            limit_key=key,
            run_id=lease.run_id,
            position=position,
            queue=queue,
            queued_at=now,
            priority=priority,
            **state,
        )
    )


def _return_ticket(lease, declared: Limit, key: str, position: int) -> None:
    """The step at ``position`` ended: its ticket stops holding a slot (and, for a rate,
    counts until ``per`` from now). Freeing a slot wakes the next waiters in line."""
    now = clock.now()
    mine = [lease.run_id, position, lease.token]
    if declared.concurrency is None:  # nobody waits for this to happen: one statement
        with connection.cursor() as cursor:
            cursor.execute(_TICKET_RELEASE_SQL, [_at(now), *mine])
        return
    with transaction.atomic():
        _lock(declared.name, key)  # an acquirer sees our release, or we see its waiting ticket
        with connection.cursor() as cursor:
            if (
                declared.rate is None
            ):  # it counts for nothing once released: no row left behind per key
                cursor.execute(_TICKET_RETURN_SQL, mine)
            else:
                cursor.execute(_TICKET_RELEASE_SQL, [_at(now), *mine])
            _wake_next(cursor, declared, key, now)


def _lock(name: str, key: str) -> None:
    """Serialise the limit's acquirers and releasers until commit."""
    advisory_xact_lock(LIMIT_LOCK_CLASS, name, key)


def _forget_spent(cursor, declared: Limit, key: str, now) -> None:
    """Tickets that no longer count: released past the window, held by a lease that is gone.
    (Waiters that will not come back are dropped as the line is read: ``_line``.)"""
    cutoff = _at(now - declared.window)
    cursor.execute(_FORGET_SPENT_SQL, [declared.name, key, cutoff, cutoff, _at(now)])


def _mine(cursor, run_id: str, position: int, declared: Limit, key: str, now) -> LimitTicket | None:
    """This step's waiting ticket, if it has one. A ticket it still holds is an earlier
    attempt's, whose worker is gone: it may have acted up to now, so it counts as released now."""
    waiting = None
    for ticket in sql.select(
        LimitTicket,
        "run_id = %s AND position = %s AND state IN ('waiting', 'held') ORDER BY queued_at, id",
        [run_id, position],
    ):
        if ticket.state == TicketState.HELD:
            cursor.execute(
                f"UPDATE {_TICKETS} SET state = 'released', released_at = %s WHERE id = %s",
                [_at(now), ticket.pk],
            )
        elif ticket.limit_name == declared.name and ticket.limit_key == key:
            waiting = ticket
        else:  # the code now names another limit at this step
            cursor.execute(f"DELETE FROM {_TICKETS} WHERE id = %s", [ticket.pk])
    return waiting


def _taken(cursor, declared: Limit, key: str, now) -> _Taken:
    """Slots held and, for a rate, the tokens still in its window and when each leaves it
    (a held one ``per`` after now at the earliest): read from the held and released tickets
    only, never from the waiting ones."""
    cursor.execute(_TAKEN_SQL, [_at(now), declared.name, key])
    taken = _Taken()
    start = now - declared.per if declared.rate is not None else None
    for state, granted_at, released_at, holds in cursor.fetchall():
        granted_at, released_at = _time(granted_at), _time(released_at)
        taken.holding += holds
        if start is None:
            continue
        if (state == TicketState.RELEASED and released_at and released_at > start) or (
            state == TicketState.HELD and (holds or (granted_at and granted_at > start))
        ):
            taken.in_window += 1
            taken.ends.append(
                released_at + declared.per if state == TicketState.RELEASED else now + declared.per
            )
    taken.ends.sort()
    return taken


def _reach(declared: Limit) -> int:
    """How many waiters at the head of the line are told when their turn comes: as many as
    slots or tokens free within one turn. The others wait to be called forward."""
    return min(n for n in (declared.rate, declared.concurrency) if n is not None)


def _line(cursor, declared: Limit, key: str, now, count: int) -> list[LimitTicket]:
    """The first ``count`` waiters whose runs may still come for their turn: higher priority
    first, oldest first within one.
    Those before them whose runs will not come (ended, or moved on) are dropped as they are
    met: they never hold up the line again."""
    cutoff = _at(now - timedelta(seconds=conf.limit_patience_seconds()))
    fields = LimitTicket._meta.concrete_fields
    line, after = [], (MAX_PRIORITY + 1, _FAR_BACK, 0)
    while len(line) < count:
        wanted = count - len(line)
        cursor.execute(
            _LINE_SQL,
            [
                cutoff,
                f"limit:{declared.name}",
                cutoff,
                declared.name,
                key,
                after[0],
                after[0],
                _at(after[1]),
                _at(after[1]),
                after[2],
                wanted,
            ],
        )
        rows = cursor.fetchall()
        waiters = sql.instances(LimitTicket, fields, [row[:-1] for row in rows])
        gone = [waiter.pk for waiter, row in zip(waiters, rows) if not row[-1]]
        line += [waiter for waiter, row in zip(waiters, rows) if row[-1]]
        if gone:
            cursor.execute(
                f"DELETE FROM {_TICKETS} WHERE id IN ({', '.join(['%s'] * len(gone))})", gone
            )
        if len(rows) < wanted:
            break  # the line ends here
        after = (waiters[-1].priority, waiters[-1].queued_at, waiters[-1].pk)
    return line


def _place(line: list, waiting: LimitTicket | None, reach: int, priority: int) -> int | None:
    """How many live waiters are ahead of this step (``waiting``, or a newcomer of
    ``priority``, behind every waiter of its priority or higher); None when ``reach`` or
    more: it is not at the head of the line."""
    if waiting is None:
        place = sum(1 for other in line if other.priority >= priority)
    else:
        place = next((n for n, other in enumerate(line) if other.pk == waiting.pk), reach)
    return place if place < reach else None


def _free(declared: Limit, taken: _Taken) -> int:
    room = []
    if declared.concurrency is not None:
        room.append(declared.concurrency - taken.holding)
    if declared.rate is not None:
        room.append(declared.rate - taken.in_window)
    return min(room)


def _chances(declared: Limit, taken: _Taken, now, places: list[int]) -> list[datetime]:
    """When the waiter with ``place`` live waiters before it may find room, for each place:
    for a rate, when enough tokens leave the window; for concurrency, a lease's length (a
    holder that ends sooner wakes it, one whose worker died frees its slot by then)."""
    found = []
    for place in places:
        chances = [now]
        if declared.concurrency is not None and taken.holding + place >= declared.concurrency:
            chances.append(now + timedelta(seconds=conf.lease_seconds()))
        if declared.rate is not None and taken.in_window + place >= declared.rate:
            needed = place + 1 - (declared.rate - taken.in_window)
            if needed <= len(taken.ends):
                chances.append(taken.ends[needed - 1])
            else:
                last = taken.ends[-1] if taken.ends else now
                chances.append(
                    last + declared.per * math.ceil((needed - len(taken.ends)) / declared.rate)
                )
        found.append(max(chances))
    return found


def _far_chance(cursor, declared: Limit, key: str, waiting: LimitTicket | None, now) -> datetime:
    """When a waiter behind the head of the line looks again if nobody calls it forward
    first (a grant calls the next waiter forward: this is only the safety net, for a head
    whose runs all left). Never sooner than patience; a newcomer a little later than the
    waiter before it (twice its share of a turn), so a line of N waiters looks again after
    about twice the time it takes to serve; a waiter that looked and is still behind, after
    as long again as it has waited. One row read, however long the line."""
    floor = now + timedelta(seconds=conf.limit_patience_seconds())
    if waiting is not None:
        return max(floor, now + (now - waiting.queued_at))
    turn = declared.per if declared.rate is not None else timedelta(seconds=conf.lease_seconds())
    cursor.execute(_LAST_WAITER_SQL, [declared.name, key])
    row = cursor.fetchone()
    last = _time(row[0]) if row else None
    return max(floor, last + 2 * turn / _reach(declared)) if last is not None else floor


def _call_forward(
    cursor,
    declared: Limit,
    head: list[LimitTicket],
    taken: _Taken,
    now,
    *,
    skip: LimitTicket | None = None,
) -> None:
    """Tell each waiter at the head of the line (``head``, in order) when its turn comes,
    where it was told later: the one a grant just moved up, or one that waited behind a
    waiter that left. Its run's ``wake_at`` is brought forward (never back), so the sweep
    sends it then, on the lane. ``skip``: the caller's own ticket, in line but told already."""
    for waiter, chance in zip(head, _chances(declared, taken, now, list(range(len(head))))):
        if (
            waiter.wake_at is not None
            and waiter.wake_at <= chance
            or skip is not None
            and waiter.pk == skip.pk
        ):
            continue
        cursor.execute(_TICKET_WAKE_SQL, [_at(chance), waiter.pk])
        wake_runs([waiter.run_id], now=now, by=chance)


def _wake_next(cursor, declared: Limit, key: str, now) -> None:
    """Wake the first waiters that the free slots let through; bumping signal_seq makes a
    waiter that is parking right now look again (see LiveStore.settle), so no wake-up is lost."""
    free = declared.concurrency - _taken(cursor, declared, key, now).holding
    if free <= 0:
        return
    chosen = _line(cursor, declared, key, now, free)
    if not chosen:
        return
    for waiter in chosen:
        cursor.execute(_TICKET_WAKE_SQL, [_at(now), waiter.pk])
    grace = now + timedelta(seconds=conf.dispatch_grace_seconds())
    wake_runs([waiter.run_id for waiter in chosen], now=now, by=grace)
    for waiter in chosen:  # its turn: on the lane, ahead of the default queue's backlog
        dispatch(waiter.run_id, queue=waiter.queue or None, lane=True, priority=waiter.priority)


# --- finished runs moved to the archive (durable.features.archive chooses them and when) ---

# Reverse relations of WorkflowRun whose rows move with the run; every other one is kept.
MOVED = {
    "journal": (JournalEntry, ArchivedJournalEntry),
    "signals": (Signal, ArchivedSignal),
    "audit_events": (AuditEvent, ArchivedAuditEvent),
}
# Reverse relations whose rows go with the run and are not kept anywhere: a finished run's
# places at a limit (durable.limit) mean nothing once its rate windows have passed.
DROPPED = {"limit_tickets": LimitTicket}


def lock_finished_runs(runs, limit: int) -> list[str]:
    """Lock up to ``limit`` of ``runs`` (finished runs the archive chose), oldest first,
    passing over any a service or a worker holds (``SKIP LOCKED``): the next pass takes them."""
    return list(
        runs.order_by("finished_at", "id")
        .select_for_update(skip_locked=True)
        .values_list("id", flat=True)[:limit]
    )


def _columns(model, *, skip=()) -> list[str]:
    return [f.column for f in model._meta.concrete_fields if f.column not in skip]


def move_to_archive(ids: list[str], batch, *, now: datetime, exported: bool) -> int:
    """INSERT ... SELECT the locked finished runs ``ids`` into the archive under ``batch``,
    then DELETE the originals (the audit table's trigger lets a row go only once its copy is
    in the archive). Returns how many runs the archive now holds for the batch: the caller
    rolls back a batch that lost one. With ``exported``, the journal and signals went to the
    batch's file and only the audit rows move."""
    quote = connection.ops.quote_name
    marks = ", ".join(["%s"] * len(ids))
    run_columns = [c for c in _columns(ArchivedRun) if c not in ("archived_at", "batch_id")]
    # Exported runs keep no input, result or error; a column the hot table lacks is NULL.
    blanked = ({"input", "result", "error"} if exported else set()) | (
        set(run_columns) - set(_columns(WorkflowRun))
    )
    selected = ", ".join("NULL" if c in blanked else quote(c) for c in run_columns)
    archived_at = ArchivedRun._meta.get_field("archived_at").get_db_prep_value(now, connection)
    statements = [
        (
            f"INSERT INTO {quote(ArchivedRun._meta.db_table)} "
            f"({', '.join(quote(c) for c in run_columns)}, "
            f"{quote('archived_at')}, {quote('batch_id')}) "
            f"SELECT {selected}, %s, %s FROM {quote(WorkflowRun._meta.db_table)} "
            f"WHERE {quote('id')} IN ({marks})",
            [archived_at, batch.pk, *ids],
        )
    ]
    moved = [MOVED["audit_events"]] if exported else list(MOVED.values())
    for source, target in moved:
        columns = ", ".join(quote(c) for c in _columns(target))
        statements.append(
            (
                f"INSERT INTO {quote(target._meta.db_table)} ({columns}) SELECT {columns} "
                f"FROM {quote(source._meta.db_table)} WHERE {quote('run_id')} IN ({marks})",
                ids,
            )
        )
    for source in [*(source for source, _ in MOVED.values()), *DROPPED.values()]:
        statements.append(
            (
                f"DELETE FROM {quote(source._meta.db_table)} WHERE {quote('run_id')} IN ({marks})",
                ids,
            )
        )
    statements.append(
        (f"DELETE FROM {quote(WorkflowRun._meta.db_table)} WHERE {quote('id')} IN ({marks})", ids)
    )
    with connection.cursor() as cursor:
        for statement, params in statements:
            cursor.execute(statement, params)
        cursor.execute(
            f"SELECT COUNT(*) FROM {quote(ArchivedRun._meta.db_table)} "
            f"WHERE {quote('batch_id')} = %s",
            [batch.pk],
        )
        return cursor.fetchone()[0]


# --- a run's rows, for durable.services (no lease: the run's row lock instead) ---
#
# services decides (is the transition allowed, is it the same signal, which children
# follow); these write. Each runs inside the caller's transaction and writes the run's
# audit row with its change.


def audit(
    run_id: str, action: str, actor: str, detail: dict | None = None, *, first: bool = False
) -> AuditEvent:
    """The run's next audit row. The caller holds the run's row lock already (it inserted,
    updated or locked the row in this transaction); ``first`` when it created the run just now."""
    event = AuditEvent(
        run_id=run_id,
        action=str(action),
        actor=actor or "system",
        detail=detail or {},
        created_at=clock.now(),
    )
    event.save(parent_locked=True, first_in_chain=first)
    return event


def lock_run(run_id: str) -> WorkflowRun:
    """The run, its row locked until the caller's transaction ends; RunNotFound if none."""
    run = WorkflowRun.objects.select_for_update().filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def newest_in_chain(run: WorkflowRun) -> WorkflowRun:
    """The newest run of the chain ``run`` is in (``run`` itself unless it continued as new;
    also when the newest was archived)."""
    if run.continued_as_id is None:
        return run
    newest = WorkflowRun.objects.filter(
        chain_root=run.chain_root or run.id, continued_as__isnull=True
    ).first()
    return newest or run


def current_run(run_id: str) -> WorkflowRun:
    """The newest live run of the chain ``run_id`` is in, also when ``run_id`` itself was
    archived (a chain outlives its first runs' retention); RunNotFound if none is live."""
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is not None:
        return newest_in_chain(run)
    archived = ArchivedRun.objects.filter(pk=run_id).values_list("chain_root", flat=True).first()
    root = archived or run_id
    newest = WorkflowRun.objects.filter(chain_root=root, continued_as__isnull=True).first()
    if newest is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return newest


def signal_in_chain(run: WorkflowRun, dedupe_key: str | None) -> Signal | None:
    """The signal with ``dedupe_key`` that any run of ``run``'s continue-as-new chain has."""
    if not dedupe_key:
        return None
    root = run.chain_root or run.id
    return (
        Signal.objects.filter(Q(run_id=root) | Q(run__chain_root=root), dedupe_key=dedupe_key)
        .order_by("id")
        .first()
    )


def update_outcome(run: WorkflowRun, update_id: str) -> JournalEntry | None:
    """The journal entry of update ``update_id`` in ``run``'s chain (it follows the run's
    untaken signals to a successor), once applied; None before."""
    root = run.chain_root or run.id
    return (
        JournalEntry.objects.filter(
            Q(run_id=root) | Q(run__chain_root=root),
            kind=EntryKind.UPDATE,
            idempotency_key=update_id,
        )
        .exclude(status=EntryStatus.STARTED)
        .first()
    )


def hold_run(run_id: str) -> None:
    """Lock the run's row (and read nothing else of it); RunNotFound if there is none."""
    if not list(WorkflowRun.objects.select_for_update().filter(pk=run_id).values_list("pk")):
        raise RunNotFound(f"no run with id {run_id!r}")


def create_run(
    run: WorkflowRun, *, actor: str, detail: dict, action: str = AuditAction.START
) -> bool:
    """Insert ``run`` and its first audit row; False, writing nothing, when its id is taken
    by a live run or an archived one (an archived id never starts again). One statement on
    the common path: the check costs nothing when the id is new."""
    with transaction.atomic(savepoint=False):  # joins the caller's transaction as it is
        inserted = sql.insert_unless_exists(run, unless_in=ArchivedRun)
        if inserted:
            audit(run.id, action, actor, detail, first=True)
    return inserted


def start_run(
    definition,
    encoded_input,
    run_id: str,
    *,
    actor: str,
    detail: dict,
    parent: str | None = None,
    priority: int = DEFAULT_PRIORITY,
) -> WorkflowRun:
    """Create the run (and dispatch it after commit), or return the one with this id.

    The id is the idempotency key: the same id with another workflow or other input is a
    RunConflict, an archived id is RunArchived; neither writes anything."""
    now = clock.now()
    run = WorkflowRun(
        id=run_id,
        workflow_name=definition.name,
        workflow_version=definition.version,
        input=encoded_input,
        created_at=now,
        updated_at=now,
        wake_at=_grace(),
        parent_id=parent,
        priority=priority,
    )
    if create_run(run, actor=actor, detail=detail):
        dispatch(run_id, queue=definition.queue, priority=priority)
        return run
    existing = WorkflowRun.objects.filter(pk=run_id).first()
    if existing is None:  # what stopped the insert is the archive (nothing was written)
        raise RunArchived(
            f"run {run_id!r} finished and was archived; it cannot start again "
            "(read it in the archive: durable export, the admin, the API)"
        )
    if existing.workflow_name != definition.name or existing.input != encoded_input:
        raise RunConflict(
            f"run {run_id!r} already exists as {existing.workflow_name} with input "
            f"{existing.input!r}; refusing to start {definition.name} with input {encoded_input!r}"
        )
    return existing


def fork_run(
    source: WorkflowRun,
    definition,
    fork_id: str,
    kept: list[JournalEntry],
    *,
    actor: str,
    detail: dict,
) -> WorkflowRun | None:
    """Create ``fork_id``: a run of ``definition`` with the source's input whose journal is a
    copy of ``kept`` (the source's entries before the fork's position), and dispatch it after
    commit. The caller holds the source's row lock, so its journal cannot move meanwhile.

    The signals the source had not taken by then are the fork's to take again
    (``forks.signals_taken_again``). Both runs get an audit row. None, writing nothing, when
    the id is taken."""
    position = len(kept)
    now = clock.now()
    attributes = {}
    for entry in kept:
        if entry.kind == EntryKind.ATTRIBUTES:
            attributes.update(entry.result or {})
    fork = WorkflowRun(
        id=fork_id,
        workflow_name=definition.name,
        workflow_version=definition.version,
        input=source.input,
        attributes=attributes,
        forked_from_id=source.id,
        fork_position=position,
        priority=source.priority,
        created_at=now,
        updated_at=now,
        wake_at=_grace(),
    )
    reapplied = [
        Signal(
            run_id=fork_id,
            name=signal.name,
            payload=signal.payload,
            dedupe_key=signal.dedupe_key,
            created_at=signal.created_at,
        )
        for signal in forks.signals_taken_again(source.id, position)
    ]
    told = {
        "forked_from": source.id,
        "at_position": position,
        "entries_copied": len(kept),
        "signals_reapplied": len(reapplied),
        "version": definition.version,
        **detail,
    }
    with transaction.atomic(savepoint=False):
        if not create_run(fork, actor=actor, detail=told, action=AuditAction.FORK):
            return None
        JournalEntry.objects.bulk_create(
            [
                JournalEntry(
                    run_id=fork_id, **{name: getattr(entry, name) for name in _COPIED_ENTRY_FIELDS}
                )
                for entry in kept
            ]
        )
        Signal.objects.bulk_create(reapplied)
        audit(
            source.id, AuditAction.FORK, actor, {"fork": fork_id, "at_position": position, **detail}
        )
    dispatch(fork_id, queue=definition.queue, priority=fork.priority)
    return fork


def _bounded_id(root: str, suffix: str) -> str:
    """``root + suffix`` within the 255 characters of a run id."""
    if len(root) + len(suffix) <= 255:
        return root + suffix
    return f"{root[:180]}~{hashlib.sha256(root.encode()).hexdigest()[:32]}{suffix}"


# What a fork copies of an entry: everything but its row and its run.
_COPIED_ENTRY_FIELDS = [
    f.attname for f in JournalEntry._meta.concrete_fields if f.attname not in ("id", "run_id")
]


def send_signal(
    run_id: str, name: str, encoded_payload, *, dedupe_key: str | None, actor: str, detail: dict
) -> tuple[Signal, bool]:
    """Record a signal and wake the run (dispatched after commit): (the signal, True); or,
    when a signal with ``dedupe_key`` exists, (that signal, False) for the caller to compare.
    RunNotFound or RunFinished, writing nothing, when there is no unfinished run to take it."""
    now = clock.now()
    existing = None
    for locked in (False, True):
        signal = Signal(
            run_id=run_id,
            name=name,
            payload=encoded_payload,
            dedupe_key=dedupe_key or None,
            created_at=now,
        )
        event = AuditEvent(
            run_id=run_id,
            action=str(AuditAction.SIGNAL),
            actor=actor or "system",
            created_at=now,
            detail={"name": name, "dedupe_key": dedupe_key, **detail},
        )
        try:
            with _one_write(
                locked
            ):  # all or nothing: a refusal leaves the caller's transaction usable
                if locked:
                    lock_run(run_id)
                # Waking the run bumps signal_seq (which also locks its row): a worker about
                # to park the run sees the bump and looks again (LiveStore.settle), so no
                # signal is slept through.
                woken = record_signal(signal, event, now, _grace())
            break
        except IntegrityError:
            # The key's signal exists (a redelivery, or a concurrent sender won), or another
            # writer extended the audit chain while we waited for the run: again, locked.
            existing = _signal_with_key(run_id, dedupe_key)
            if existing is not None:
                break
            if locked:
                raise
    if existing is None and woken is None:
        existing = _signal_with_key(run_id, dedupe_key)  # a redelivery to a finished run
        if existing is None:
            status = WorkflowRun.objects.filter(pk=run_id).values_list("status", flat=True).first()
            if status is None:
                raise RunNotFound(f"no run with id {run_id!r}")
            raise RunFinished(f"run {run_id!r} is {status} and takes no more signals")
    if existing is not None:
        return existing, False
    dispatch(run_id, priority=woken)  # a blocked run ignores it; its signals wait for the repair
    return signal, True


def _one_write(locked: bool):
    """The scope of send_signal's writes. One statement alone needs none on PostgreSQL
    outside a transaction (it is atomic by itself); a caller's transaction gets a savepoint,
    so a refused signal leaves it usable; the locked retry and SQLite, a transaction."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block and not locked:
        return nullcontext()
    return transaction.atomic()


def _signal_with_key(run_id: str, dedupe_key: str | None) -> Signal | None:
    return (
        Signal.objects.filter(run_id=run_id, dedupe_key=dedupe_key).first() if dedupe_key else None
    )


def start_child_run(
    parent_id: str, definition, args, kwargs, child_id: str, priority: int = DEFAULT_PRIORITY
) -> WorkflowRun:
    """Start ``child_id`` for the parent in the caller's transaction, at the parent's
    ``priority``, or adopt it.

    The id is the idempotency key: a run that exists with the same workflow and input is
    this child (adopted if it has no parent yet; if it already finished, its outcome is
    sent to the parent now). A run of another parent, workflow or input is a RunConflict.
    """
    child = start_run(
        definition,
        definition.encode_input(args, kwargs),
        child_id,
        parent=parent_id,
        actor=f"run:{parent_id}",
        detail={"workflow": definition.name, "version": definition.version, "parent": parent_id},
        priority=priority,
    )
    if child.parent_id == parent_id:
        return child
    if child.parent_id is not None:
        raise RunConflict(
            f"run {child_id!r} is already a child of {child.parent_id!r}; "
            f"refusing to make it a child of {parent_id!r} too"
        )
    if not adopt_child(child_id, parent_id):
        raise RunConflict(f"run {child_id!r} was just made the child of another run")
    child.parent_id = parent_id
    child.refresh_from_db(fields=["status", "result", "error"])
    if child.is_finished:
        notify_parent(child, status=child.status, result=child.result, error=child.error)
    return child


def notify_parent(child: WorkflowRun, *, status: str, result, error) -> None:
    """Send the child's outcome to its parent, in the caller's transaction. A parent that
    finished or is gone needs nothing: the child's own row keeps the outcome."""
    if not child.parent_id:
        return
    # The parent waits on the id it started: the first run of a chain that continued as new.
    started = child.chain_root or child.id
    outcome = codec.encode({"id": started, "status": status, "result": result, "error": error})
    key, actor, detail = (
        children.dedupe_key(started),
        f"run:{child.id}",
        {"child": child.id, "status": status},
    )
    try:
        signal, new = send_signal(
            child.parent_id,
            children.signal_name(started),
            outcome,
            dedupe_key=key,
            actor=actor,
            detail=detail,
        )
    except (RunFinished, RunNotFound):
        return
    if not new and codec.canonical(signal.payload) != codec.canonical(outcome):
        # The parent was told an earlier outcome (the child failed, and was retried since):
        # one it has not read yet becomes this one; one it read stands, it acted on it.
        replace_untaken_signal(child.parent_id, key, outcome, actor=actor, detail=detail)


def adopt_child(child_id: str, parent_id: str) -> bool:
    """Make the parentless run ``child_id`` a child of ``parent_id``; False if it has a parent."""
    return bool(
        WorkflowRun.objects.filter(pk=child_id, parent__isnull=True).update(parent=parent_id)
    )


def replace_untaken_signal(
    run_id: str, dedupe_key: str, payload, *, actor: str, detail: dict
) -> bool:
    """Give the run's not-yet-taken signal with ``dedupe_key`` the (encoded) ``payload``;
    False when there is none left to change."""
    with transaction.atomic(savepoint=False):
        lock_run(run_id)
        untaken = Signal.objects.filter(
            run_id=run_id, dedupe_key=dedupe_key, consumed_position__isnull=True
        )
        signal = untaken.first()
        if signal is None:
            return False
        untaken.update(payload=payload)
        audit(
            run_id,
            AuditAction.SIGNAL,
            actor,
            {
                "name": signal.name,
                "signal_id": signal.pk,
                "dedupe_key": dedupe_key,
                "replaced": True,
                **detail,
            },
        )
    return True


def cancel_run(run: WorkflowRun, *, reason: str, actor: str, detail: dict) -> None:
    """Inside the caller's transaction, ``run`` locked: end it cancelled now. Bumping the
    fencing token stops a worker that is running it right now at its next write."""
    now = clock.now()
    changes = {
        "status": run.status_after("cancel"),
        "fencing_token": run.fencing_token + 1,
        "error": {"type": "Cancelled", "message": reason or "cancelled"},
        "wake_at": None,
        "lease_owner": "",
        "lease_expires_at": None,
        "waiting_for": "",
        "updated_at": now,
        "finished_at": now,
    }
    WorkflowRun.objects.filter(pk=run.id).update(**changes)
    run.cancel()
    for name, value in changes.items():
        if name != "status":
            setattr(run, name, value)
    audit(run.id, AuditAction.CANCEL, actor, {"reason": reason, **detail})


def request_cancel(run: WorkflowRun, request: dict, *, actor: str, detail: dict) -> None:
    """Inside the caller's transaction, ``run`` locked: store a graceful cancel's request and
    wake the run (``signal_seq``: a worker about to park it looks again and sees it)."""
    now = clock.now()
    run.cancel_request = request
    wake_runs([run.id], now=now, by=now, cancel_request=request)
    audit(run.id, AuditAction.CANCEL, actor, detail)


def retry_run(run: WorkflowRun, *, actor: str, detail: dict) -> None:
    """Inside the caller's transaction, ``run`` locked: back to pending; a step that failed
    last gets a fresh retry budget."""
    now = clock.now()
    last = JournalEntry.objects.filter(run_id=run.id).order_by("-position").first()
    if last is not None and last.kind == EntryKind.STEP and last.status == EntryStatus.FAILED:
        last.status, last.attempt, last.wake_at, last.updated_at = (
            EntryStatus.RETRYING,
            0,
            None,
            now,
        )
        last.save(update_fields=["status", "attempt", "wake_at", "updated_at"])
    previous_error = run.error
    changes = {
        "status": run.status_after("retry"),
        "error": None,
        "finished_at": None,
        "updated_at": now,
        "wake_at": _grace(),
    }
    WorkflowRun.objects.filter(pk=run.id).update(**changes)
    run.retry()
    for name, value in changes.items():
        if name != "status":
            setattr(run, name, value)
    audit(run.id, AuditAction.RETRY, actor, {"previous_error": previous_error, **detail})


def fire_timers(run: WorkflowRun, *, actor: str, detail: dict | None) -> None:
    """Inside the caller's transaction, ``run`` locked: its sleeps and back-offs end now (a
    wait for a signal keeps its deadline: it is only looked at again)."""
    now = clock.now()
    JournalEntry.objects.filter(
        run_id=run.id,
        wake_at__gt=now,
        kind__in=[EntryKind.SLEEP, EntryKind.STEP],
        status__in=[EntryStatus.WAITING, EntryStatus.RETRYING],
    ).update(wake_at=now, updated_at=now)
    run.wake_at, run.updated_at = _grace(), now
    WorkflowRun.objects.filter(pk=run.id).update(wake_at=run.wake_at, updated_at=now)
    audit(run.id, AuditAction.WAKE, actor, detail)


def _grace():
    return clock.now() + timedelta(seconds=conf.dispatch_grace_seconds())
