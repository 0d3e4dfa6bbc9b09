"""The live store: claiming a run, and every statement on its rows while the lease is held.

A worker that lost its lease (paused, partitioned, cancelled under it) finds its token
stale on the next write and stops with ``Fenced``; nothing it does is recorded. No row
lock outlives a statement or a commit: a worker frozen in the middle of a step holds
nothing another worker or a sender would wait for.
"""
import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F, JSONField, Value
from django.db.models.expressions import CombinedExpression

from durable import clock, conf, limits, sql
from durable.errors import Divergence, Fenced, StoreUnavailable
from durable.models import FINISHED_STATUSES, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.store import Store

log = logging.getLogger(__name__)

# Back-offs before re-sending a journal write whose connection died: the step's effect
# already happened, so giving the run up would make the next holder repeat it.
WRITE_RETRY_DELAYS = (0.1, 0.4, 1.0)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


@dataclass
class Lease(Store):
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
    # A graceful cancel seen when a park lost its race with a signal (see finish).
    cancel_request: dict | None = field(default=None, repr=False)

    # --- the store interface (durable.store) ---

    def load(self) -> dict[int, JournalEntry]:
        with store_errors():
            return {entry.position: entry for entry in sql.journal_of(self.run_id)}

    def pending_signals(self) -> list[Signal]:
        with store_errors():
            return sql.pending_signals_of(self.run_id)

    def step_running(self, deadline: datetime | None) -> None:
        if deadline is None:
            self.step_deadline = None
        else:
            self.step_deadline = time.monotonic() + (deadline - clock.now()).total_seconds()

    def record(self, entry: JournalEntry, *, insert: bool, fields=(), perform=None, consume=None,
               attributes=None) -> None:
        entry.updated_at = clock.now()
        if perform is not None:
            return self._record_with_effects(entry, insert, fields, perform, consume, attributes)
        for delay in (*WRITE_RETRY_DELAYS, None):
            try:
                return self._write(entry, insert, fields, consume, attributes)
            except StoreUnavailable as exc:
                if delay is None or connection.in_atomic_block:
                    raise
                log.warning("run %s: journal write at position %s failed (%s); retrying on a "
                            "fresh connection", self.run_id, entry.position, _first_line(exc))
                connection.close()
                time.sleep(delay)
                if insert and self._landed(entry):
                    return None

    def acquire_limit(self, limit, key: str, position: int, queue: str):
        with store_errors():
            return limits.acquire(self, limit, key, position, queue)

    def release_limit(self, limit, key: str, position: int) -> None:
        with store_errors():
            limits.release(self, limit, key, position)

    # --- writes ---

    def _write(self, entry: JournalEntry, insert: bool, fields, consume, attributes=None) -> None:
        if insert and consume is None and attributes is None and connection.vendor == "postgresql":
            return self._insert_in_one_statement(entry)
        try:
            with transaction.atomic():
                self._write_fenced(entry, insert, fields, consume, attributes)
        except IntegrityError as exc:  # another worker wrote this position: we are the stale one
            raise Fenced(self.run_id) from exc
        except DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc

    def _record_with_effects(self, entry, insert, fields, perform, consume, attributes=None) -> None:
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
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(_LIMIT_IDLE_SQL, [self._idle_limit()])
                phase = "body"
                try:
                    perform()
                except DatabaseError as exc:
                    # Asked here, before the failed block closes a broken connection: was it
                    # the database that failed (not counted), or the step's own statement?
                    if _connection_lost():
                        raise StoreUnavailable(str(exc)) from exc
                    raise
                phase = "saving"
                self._write_fenced(entry, insert, fields, consume, attributes)
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

    def _write_fenced(self, entry, insert: bool, fields, consume, attributes) -> None:
        """Inside the caller's transaction: the fence, then the entry and what commits with it."""
        self._fence()
        if consume is not None:
            self._consume(consume, entry.position)
        self._save(entry, insert, fields)
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
                cursor.execute(_FENCE_AND_LIMIT_IDLE_SQL, [self._idle_limit(), self.run_id, self.token])
            else:
                cursor.execute(_fence_sql(), [self.run_id, self.token])
            if cursor.fetchone() is None:
                raise Fenced(self.run_id)

    def _idle_limit(self) -> str:
        return f"{max(int(self.seconds * 1000), 1)}ms"

    def _consume(self, signals: list[Signal], position: int) -> None:
        ids = [signal.pk for signal in signals]
        taken = Signal.objects.filter(pk__in=ids, consumed_position__isnull=True).update(
            consumed_position=position, consumed_at=clock.now())
        if taken != len(ids):
            raise Divergence(f"signals {ids} ({', '.join(sorted({s.name for s in signals}))}): "
                             "one was consumed by another position")

    def _merge_attributes(self, attributes: dict) -> None:
        """Inside the fenced transaction: set these search attributes, keep the others.

        PostgreSQL merges in the statement (jsonb ||); SQLite reads, merges and writes,
        which is safe because only the lease holder writes a run's attributes and its
        IMMEDIATE transaction holds the write lock."""
        query = WorkflowRun.objects.filter(pk=self.run_id)
        if connection.vendor == "postgresql":
            query.update(attributes=CombinedExpression(
                F("attributes"), "||", Value(attributes, output_field=JSONField()),
                output_field=JSONField()))
            return
        current = query.values_list("attributes", flat=True).first() or {}
        query.update(attributes={**current, **attributes})

    @staticmethod
    def _save(entry: JournalEntry, insert: bool, fields) -> None:
        if insert:
            entry.save(force_insert=True)
        else:
            entry.save(update_fields=[*fields, "updated_at"])

    def _landed(self, entry: JournalEntry) -> bool:
        """After a lost connection: did our insert commit before the connection died?

        Only while the fencing token is still ours: an entry at this position under a newer
        token is the new holder's, and taking it for ours would run the next step's effect
        after the run moved on. Fenced then, whether or not our own insert had landed.
        """
        journal, runs = JournalEntry._meta.db_table, WorkflowRun._meta.db_table
        with store_errors(), connection.cursor() as cursor:
            cursor.execute(
                f"SELECT entry.id FROM {runs} AS run LEFT JOIN {journal} AS entry ON entry.run_id = run.id "
                f"AND entry.position = %s AND entry.status = %s AND entry.attempt = %s "
                f"WHERE run.id = %s AND run.fencing_token = %s",
                [entry.position, entry.status, entry.attempt, self.run_id, self.token])
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
                f"INSERT INTO {JournalEntry._meta.db_table} ({', '.join(f.column for f in columns)}) "
                f"SELECT {', '.join(['%s'] * len(columns))} FROM fence RETURNING id")
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

    def finish(self, run: WorkflowRun, *, transition: str, wake_at=None, waiting_for="",
               check_signal_seq: bool = False, **fields) -> bool:
        """Persist an FSM transition if we still hold the lease; apply it to ``run`` after.

        Returns False (and changes nothing) when ``check_signal_seq`` is set and a signal
        arrived since the claim: the caller must look at signals again, not suspend.
        """
        status = run.status_after(transition)
        now = clock.now()
        values = dict(status=status, lease_owner="", lease_expires_at=None, wake_at=wake_at,
                      waiting_for=waiting_for, updated_at=now, recoveries=0, recovery_position=None,
                      **fields)
        if status in FINISHED_STATUSES:
            values["finished_at"] = now
        with store_errors():
            if run.parent_id and status in FINISHED_STATUSES:
                persisted = self._finish_child(run, values)
            else:
                persisted = self._persist(values, check_signal_seq)
        if persisted:
            getattr(run, transition)()
            self.done = True
        return persisted

    def _finish_child(self, run: WorkflowRun, values: dict) -> bool:
        """A child's end and the signal that tells its parent commit together."""
        from durable import children

        with transaction.atomic():
            if connection.vendor == "postgresql":  # two statements: never idle past the lease
                with connection.cursor() as cursor:
                    cursor.execute(_LIMIT_IDLE_SQL, [self._idle_limit()])
            self._persist(values, False)
            children.notify_parent(run, status=values["status"], result=values.get("result"),
                                   error=values.get("error"))
        return True

    def _persist(self, values: dict, check_signal_seq: bool) -> bool:
        if check_signal_seq:
            if sql.update_row(WorkflowRun, self.run_id, values, fencing_token=self.token,
                          signal_seq=self.signal_seq):
                return True
            current = (WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token)
                       .values_list("signal_seq", "cancel_request").first())
            if current is None:
                raise Fenced(self.run_id)
            self.signal_seq, self.cancel_request = current
            return False
        if not sql.update_row(WorkflowRun, self.run_id, values, fencing_token=self.token):
            raise Fenced(self.run_id)
        return True

    def note_recovery(self, position: int) -> None:
        """The first takeover at this journal length: count from one again."""
        with store_errors():
            WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token).update(
                recoveries=1, recovery_position=position)

    def extend(self, *, wait: bool = True) -> bool | None:
        """Heartbeat: push the expiry forward; False if the lease is gone.

        ``wait=False`` (the heartbeat thread, on PostgreSQL) returns None at once when
        another transaction holds the run row (a sender's open transaction after
        ``signal_send``): one thread extends every lease of its process, and must not
        stall behind one locked row while the others expire.
        """
        expires = clock.now() + timedelta(seconds=self.seconds)
        # Only while the run is still ours and running: a heartbeat that lands just after
        # the run was parked or finished must not give it a lease (and a wake time) again.
        ours = WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token, status=RunStatus.RUNNING)
        if wait or not connection.features.has_select_for_update_skip_locked:
            return bool(ours.update(lease_expires_at=expires, wake_at=expires))
        dt = WorkflowRun._meta.get_field("lease_expires_at")
        expires = dt.get_db_prep_save(expires, connection)
        with connection.cursor() as cursor:  # one statement: atomic without a transaction block
            cursor.execute(_EXTEND_UNLESS_LOCKED_SQL, [expires, expires, self.run_id, self.token,
                                                       RunStatus.RUNNING])
            if cursor.fetchone() is not None:
                return True
        return None if ours.exists() else False  # a plain read never waits for a lock


_EXTEND_UNLESS_LOCKED_SQL = (
    f"UPDATE {WorkflowRun._meta.db_table} SET lease_expires_at = %s, wake_at = %s WHERE id = ("
    f"SELECT id FROM {WorkflowRun._meta.db_table} WHERE id = %s AND fencing_token = %s AND status = %s "
    f"FOR NO KEY UPDATE SKIP LOCKED) RETURNING 1")


_FENCED_INSERT_SQL: dict[int, str] = {}


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


def _first_line(exc: BaseException) -> str:
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
    f"SELECT set_config('idle_in_transaction_session_timeout', %s, true) FROM {WorkflowRun._meta.db_table} "
    f"WHERE id = %s AND fencing_token = %s FOR SHARE")


def claim(run_id: str, *, owner: str | None = None, lease_seconds: float | None = None):
    """Take the run if it is runnable and nobody holds a live lease on it.

    Returns ``(run, lease)`` or None. One UPDATE ... RETURNING: the condition is the claim
    transition's sources (a RUNNING run only once its lease has expired, which counts as a
    recovery). Bumping the fencing token here is what makes the previous holder's next
    write fail.
    """
    owner = (owner or default_owner())[:255]
    seconds = lease_seconds or conf.lease_seconds()
    return on_live_connection(lambda: _claim(run_id, owner, seconds))


def _claim(run_id: str, owner: str, seconds: float):
    now = clock.now()
    expires = now + timedelta(seconds=seconds)
    waiting = [status for status in WorkflowRun.sources_of("claim") if status != RunStatus.RUNNING]
    fields = [f for f in WorkflowRun._meta.concrete_fields]
    statement = (
        f"UPDATE {WorkflowRun._meta.db_table} SET status = %s, lease_owner = %s, lease_expires_at = %s, "
        f"wake_at = %s, fencing_token = fencing_token + 1, advances = advances + 1, updated_at = %s, "
        f"recoveries = CASE WHEN status = %s THEN recoveries + 1 ELSE 0 END "
        f"WHERE id = %s AND (status IN ({', '.join(['%s'] * len(waiting))}) OR (status = %s AND "
        f"(lease_expires_at IS NULL OR lease_expires_at <= %s))) "
        f"RETURNING {', '.join(f.column for f in fields)}")
    dt = WorkflowRun._meta.get_field("lease_expires_at")
    params = [RunStatus.RUNNING, owner, dt.get_db_prep_save(expires, connection),
              dt.get_db_prep_save(expires, connection), dt.get_db_prep_save(now, connection),
              RunStatus.RUNNING, run_id, *waiting, RunStatus.RUNNING, dt.get_db_prep_save(now, connection)]
    with connection.cursor() as cursor:  # one statement: atomic without a transaction block
        cursor.execute(statement, params)
        row = cursor.fetchone()
    if row is None:
        return None
    run = sql.instances(WorkflowRun, fields, [row])[0]
    return run, Lease(run_id=run_id, owner=owner, token=run.fencing_token, seconds=seconds,
                      signal_seq=run.signal_seq)


class Heartbeat:
    """One daemon thread per process that extends the leases of long-running steps.

    It serves every advance of its process (one under the prefork pool, up to
    ``--concurrency`` under the threads pool) on one database connection of its own. It
    writes only for an advance that has held or extended its lease for a third of its
    length: fast steps never cause a heartbeat query. A run row locked by another
    transaction is passed over until the next tick rather than waited for, so one held
    row cannot let every other lease of the process expire. A step past its timeout is
    not kept: its lease runs out and another worker records the attempt as timed out.
    """

    IDLE_EXIT_SECONDS = 60.0

    def __init__(self):
        self._leases: dict[int, tuple[Lease, float]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def hold(self, lease: Lease):
        if not conf.heartbeat_enabled():
            yield lease
            return
        with self._lock:
            self._leases[id(lease)] = (lease, time.monotonic())
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="durable-heartbeat", daemon=True)
                self._thread.start()
        try:
            yield lease
        finally:
            with self._lock:
                self._leases.pop(id(lease), None)

    def _held(self, key: int) -> bool:
        with self._lock:
            return key in self._leases

    def _loop(self):
        idle_since = time.monotonic()
        timed_out: set[int] = set()
        try:
            while True:
                with self._lock:
                    held = list(self._leases.items())
                    if not held and time.monotonic() - idle_since > self.IDLE_EXIT_SECONDS:
                        self._thread = None
                        return
                if held:
                    idle_since = time.monotonic()
                for key, (lease, last) in held:
                    if time.monotonic() - last < lease.seconds / 3:
                        continue
                    if lease.step_deadline is not None and time.monotonic() >= lease.step_deadline:
                        if key not in timed_out:
                            timed_out.add(key)
                            log.warning("run %s: a step ran past its timeout; its lease is left to "
                                        "expire", lease.run_id)
                        continue
                    try:
                        alive = lease.extend(wait=False)
                    except Exception as exc:
                        log.warning("run %s: heartbeat failed: %s", lease.run_id, _first_line(exc))
                        connection.close()  # a fresh one next time
                        continue
                    if alive is None:  # its row is locked by a transaction: next tick
                        continue
                    if not alive and not lease.done and self._held(key):
                        log.warning("run %s: lease lost while a step was running", lease.run_id)
                    with self._lock:
                        if key in self._leases:
                            self._leases[key] = (lease, time.monotonic())
                timed_out &= {key for key, _ in held}
                time.sleep(0.2)
        finally:
            connection.close()


heartbeat = Heartbeat()
