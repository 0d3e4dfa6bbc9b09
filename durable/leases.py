"""Claiming a run and writing under its lease: every write checks the fencing token.

A worker that lost its lease (paused, partitioned, cancelled under it) finds its token
stale on the next write and stops with ``Fenced``; nothing it does is recorded.
"""
import logging
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import DatabaseError, IntegrityError, connection, transaction

from durable import clock, conf
from durable.errors import Fenced, StoreUnavailable
from durable.models import JournalEntry, RunStatus, WorkflowRun

log = logging.getLogger(__name__)


def default_owner() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


@dataclass
class Lease:
    run_id: str
    owner: str
    token: int
    seconds: float
    signal_seq: int

    def _expiry(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.seconds)

    def fence(self) -> None:
        """Inside a transaction: check the token and hold the run row until commit.

        FOR SHARE (PostgreSQL) blocks a claim or a cancel from bumping the token until we
        commit, without writing a new version of the run row at every step; SQLite's
        IMMEDIATE transactions already hold the write lock.
        """
        with store_errors(), connection.cursor() as cursor:
            cursor.execute(_fence_sql(), [self.run_id, self.token])
            if cursor.fetchone() is None:
                raise Fenced(self.run_id)

    def write(self, entry: JournalEntry, *, insert: bool, fields=(), also=()) -> None:
        """Persist one journal entry, and run ``also`` (callables) in the same transaction."""
        now = clock.now()
        entry.updated_at = now
        if insert and not also and connection.vendor == "postgresql":
            return self._insert_in_one_statement(entry, now)
        saving_entry = False
        try:
            with transaction.atomic():
                self.fence()
                for extra in also:
                    extra()
                saving_entry = True
                if insert:
                    entry.save(force_insert=True)
                else:
                    entry.save(update_fields=[*fields, "updated_at"])
        except IntegrityError as exc:
            if saving_entry:  # another worker wrote this position: we are the stale one
                raise Fenced(self.run_id) from exc
            raise
        except DatabaseError as exc:
            if saving_entry:
                raise StoreUnavailable(str(exc)) from exc
            raise

    def _insert_in_one_statement(self, entry: JournalEntry, now: datetime) -> None:
        """Fence and insert in one round trip, the common case of every step on PostgreSQL:
        the entry is inserted only if the token still matches, under a row lock."""
        entry.created_at = entry.created_at or now
        columns = [f for f in JournalEntry._meta.concrete_fields if not f.primary_key]
        values = [f.get_db_prep_save(getattr(entry, f.attname), connection) for f in columns]
        sql = _FENCED_INSERT_SQL.get(len(columns))
        if sql is None:
            sql = _FENCED_INSERT_SQL[len(columns)] = (
                f"WITH fence AS ({_fence_sql()}) "
                f"INSERT INTO {JournalEntry._meta.db_table} ({', '.join(f.column for f in columns)}) "
                f"SELECT {', '.join(['%s'] * len(columns))} FROM fence RETURNING id")
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql, [self.run_id, self.token, *values])
                row = cursor.fetchone()
        except IntegrityError as exc:
            raise Fenced(self.run_id) from exc
        except DatabaseError as exc:
            raise StoreUnavailable(str(exc)) from exc
        if row is None:
            raise Fenced(self.run_id)
        entry.pk = row[0]
        entry._state.adding = False

    def finish(self, run: WorkflowRun, *, transition: str, wake_at=None, waiting_for="",
               check_signal_seq: bool = False, **fields) -> bool:
        """Apply an FSM transition and persist it if we still hold the lease.

        Returns False (and changes nothing) when ``check_signal_seq`` is set and a signal
        arrived since the claim: the caller must look at signals again, not suspend.
        """
        getattr(run, transition)()
        now = clock.now()
        values = dict(status=run.status, lease_owner="", lease_expires_at=None, wake_at=wake_at,
                      waiting_for=waiting_for, updated_at=now, **fields)
        if run.status in (RunStatus.COMPLETED, RunStatus.FAILED):
            values["finished_at"] = now
        with store_errors():
            return self._persist(values, check_signal_seq)

    def _persist(self, values: dict, check_signal_seq: bool) -> bool:
        query = WorkflowRun.objects.filter(pk=self.run_id, fencing_token=self.token)
        if check_signal_seq:
            updated = query.filter(signal_seq=self.signal_seq).update(**values)
            if updated:
                return True
            current = query.values_list("signal_seq", flat=True).first()
            if current is None:
                raise Fenced(self.run_id)
            self.signal_seq = current
            return False
        if not query.update(**values):
            raise Fenced(self.run_id)
        return True

    def extend(self) -> bool:
        """Heartbeat: push the expiry forward; False if the lease is gone."""
        now = clock.now()
        expires = self._expiry(now)
        # Only while the run is still ours and running: a heartbeat that lands just after
        # the run was parked or finished must not give it a lease (and a wake time) again.
        updated = WorkflowRun.objects.filter(
            pk=self.run_id, fencing_token=self.token, status=RunStatus.RUNNING).update(
            lease_expires_at=expires, wake_at=expires)
        return bool(updated)


_FENCED_INSERT_SQL: dict[int, str] = {}


@contextmanager
def store_errors():
    """Turn a failed write of the engine's own rows into StoreUnavailable."""
    try:
        yield
    except DatabaseError as exc:
        raise StoreUnavailable(str(exc)) from exc


def _fence_sql() -> str:
    lock = " FOR SHARE" if connection.vendor == "postgresql" else ""
    return f"SELECT 1 FROM {WorkflowRun._meta.db_table} WHERE id = %s AND fencing_token = %s{lock}"


def _claimable_statuses() -> list[str]:
    """The sources of the FSM's ``claim`` transition: the diagram decides what is claimable."""
    return [str(source) for source in WorkflowRun.claim._django_fsm.transitions]


def claim(run_id: str, *, owner: str | None = None, lease_seconds: float | None = None):
    """Take the run if it is runnable and nobody holds a live lease on it.

    Returns ``(run, lease)`` or None. One UPDATE ... RETURNING: the condition is the claim
    transition's sources (a RUNNING run only once its lease has expired). Bumping the
    fencing token here is what makes the previous holder's next write fail.
    """
    owner = (owner or default_owner())[:255]
    now = clock.now()
    seconds = lease_seconds or conf.lease_seconds()
    expires = now + timedelta(seconds=seconds)
    waiting = [status for status in _claimable_statuses() if status != RunStatus.RUNNING]
    fields = [f for f in WorkflowRun._meta.concrete_fields]
    sql = (
        f"UPDATE {WorkflowRun._meta.db_table} SET status = %s, lease_owner = %s, lease_expires_at = %s, "
        f"wake_at = %s, fencing_token = fencing_token + 1, advances = advances + 1, updated_at = %s "
        f"WHERE id = %s AND (status IN ({', '.join(['%s'] * len(waiting))}) OR (status = %s AND "
        f"(lease_expires_at IS NULL OR lease_expires_at <= %s))) "
        f"RETURNING {', '.join(f.column for f in fields)}")
    dt = WorkflowRun._meta.get_field("lease_expires_at")
    params = [RunStatus.RUNNING, owner, dt.get_db_prep_save(expires, connection),
              dt.get_db_prep_save(expires, connection), dt.get_db_prep_save(now, connection), run_id,
              *waiting, RunStatus.RUNNING, dt.get_db_prep_save(now, connection)]
    with connection.cursor() as cursor:  # one statement: atomic without a transaction block
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    converters = connection.ops.get_db_converters
    values = []
    for f, value in zip(fields, row):
        expression = f.get_col(WorkflowRun._meta.db_table)
        for converter in converters(expression) + expression.get_db_converters(connection):
            value = converter(value, expression, connection)
        values.append(value)
    run = WorkflowRun.from_db(connection.alias, [f.attname for f in fields], values)
    return run, Lease(run_id=run_id, owner=owner, token=run.fencing_token, seconds=seconds,
                      signal_seq=run.signal_seq)


class Heartbeat:
    """One daemon thread per process that extends the leases of long-running steps.

    Journal writes extend the lease too, so the thread only writes for an advance that has
    held its lease for a third of its length: fast steps never cause a heartbeat query.
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

    def _loop(self):
        idle_since = time.monotonic()
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
                    try:
                        alive = lease.extend()
                    except Exception:
                        log.exception("run %s: heartbeat failed", lease.run_id)
                        connection.close()  # a fresh one next time
                        continue
                    if not alive:
                        log.warning("run %s: lease lost while a step was running", lease.run_id)
                    with self._lock:
                        if key in self._leases:
                            self._leases[key] = (lease, time.monotonic())
                time.sleep(0.2)
        finally:
            connection.close()


heartbeat = Heartbeat()
