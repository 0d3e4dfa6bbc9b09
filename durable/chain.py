"""Tamper-evident audit tables: append-only rows, each carrying a hash chained to the one before.

A chain is the audit trail of one parent row (a run, an approval case). Writing a row locks
its parent FOR UPDATE, the lock the services already hold while they change that parent, so
writers to one chain are serialised and writers to different chains never wait on each other;
a unique (parent, chain_seq) constraint turns a writer that skipped the lock into an error,
never a fork. SQLite serialises every writer anyway (IMMEDIATE transactions).

On PostgreSQL a trigger refuses UPDATE and DELETE (queryset update()/delete() included);
TRUNCATE stays possible, for the test suite's flush and for a deliberate purge. On SQLite a
trigger refuses UPDATE only (the test flush deletes rows). ``durable audit verify`` walks
every chain and names the first broken link.

A link's hash is plain SHA-256, which anyone can recompute: whoever owns the tables could
edit a row and hash the chain again. So each row also carries a seal, an HMAC of its hash
with a key kept outside the database (``conf.audit_key``): a chain re-hashed without the key
does not verify. A chain cut at its end, or emptied, still verifies on its own; the heads
exported outside the database (durable.features.audit_heads) show that.
"""

import hashlib
import hmac
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.apps import apps
from django.db import connections, models, router, transaction
from django.db.migrations import RunPython

from durable import conf, sql

GENESIS = "0" * 64


class AppendOnly(Exception):
    """Raised on any attempt to change or delete an audit row through the ORM."""


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs):
        raise AppendOnly("audit rows are never changed")

    def delete(self):
        raise AppendOnly("audit rows are never deleted")


# What a run's (or a schedule's) audit row hash covers, in order: the live table and the
# archive's copy share it, or an archived chain would not verify.
EVENT_FIELDS = ("action", "actor", "detail", "created_at")


class ChainedAudit(models.Model):
    """Base of an audit table. Subclasses name ``chain_parent`` (a foreign key) and
    ``chained_fields`` (what the hash covers, in order), and ``archived_in`` (the label of the
    table whole chains move to, ids and hashes kept) if there is one."""

    chain_parent: str = ""
    chained_fields: tuple[str, ...] = ()
    archived_in: str = ""

    chain_seq = models.PositiveBigIntegerField(default=0, editable=False)
    prev_hash = models.CharField(max_length=64, default="", editable=False)
    row_hash = models.CharField(max_length=64, default="", editable=False)
    row_mac = models.CharField(max_length=64, default="", editable=False)

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args, parent_locked: bool = False, first_in_chain: bool = False, **kwargs):
        """Append the row to its parent's chain. Callers that already hold the parent's row
        lock say ``parent_locked``; a parent created in the caller's transaction has nothing
        before this row (``first_in_chain``), so neither read is needed. The unique (parent,
        chain_seq) constraint still refuses a row whose caller was wrong."""
        if not self._state.adding:
            raise AppendOnly("audit rows are never changed")
        parent_field = self._meta.get_field(self.chain_parent)
        parent_id = getattr(self, parent_field.attname)
        # No savepoint: joins the caller's transaction as it is (an error fails it whole).
        with transaction.atomic(using=kwargs.get("using"), savepoint=False):
            last = None
            if not first_in_chain:
                if not parent_locked:
                    list(
                        parent_field.related_model._base_manager.select_for_update()
                        .filter(pk=parent_id)
                        .values_list("pk")
                    )
                last = sql.last_link(type(self), parent_field.column, parent_id)
            self.chain_seq, self.prev_hash = (last[0] + 1, last[1]) if last else (1, GENESIS)
            self.row_hash = row_digest(
                self, self.prev_hash, parent=self.chain_parent, fields=self.chained_fields
            )
            self.row_mac = seal(self.row_hash)
            if args or kwargs or self.pk is not None:
                super().save(*args, **kwargs)
            else:  # every signal and decision writes one: the ORM's save costs more than the INSERT
                sql.insert(self)

    def delete(self, *args, **kwargs):
        raise AppendOnly("audit rows are never deleted")


def _canonical(value):
    """The value as the database gives it back: JSON types only; integral floats as ints
    (PostgreSQL's jsonb returns 1e20 as an integer); datetimes in UTC ISO form."""
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {str(key): _canonical(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_canonical(item) for item in value]
    return value


def row_digest(row, prev_hash: str, *, parent: str, fields: tuple[str, ...]) -> str:
    """SHA-256 of the previous hash and the row's chained values.

    Works on the migrations' historical models too, so the caller names the parent and the
    fields: they are a stored format, changed only with a migration that re-chains.
    """
    return link_digest(prev_hash, row_body(row, parent=parent, fields=fields))


def row_body(row, *, parent: str, fields: tuple[str, ...]) -> str:
    """The chained values as the digest reads them: canonical JSON, ASCII only."""
    values = [row.chain_seq, str(getattr(row, row._meta.get_field(parent).attname))]
    for name in fields:
        field = row._meta.get_field(name)
        values.append(_canonical(field.get_prep_value(getattr(row, field.attname))))
    return values_body(values)


def values_body(values: list) -> str:
    """A row's body from its chained values ([chain_seq, parent id, *fields], as ``row_body``
    reads them): what a copy of a chain outside the database is checked with."""
    return json.dumps(
        values, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False
    )


def link_digest(prev_hash: str, body: str) -> str:
    """The hash of one link: SHA-256 of the previous hash and the row's body."""
    return hashlib.sha256(f"{prev_hash}\n{body}".encode()).hexdigest()


def seal(row_hash: str, key: bytes | None = None) -> str:
    """The row's seal: HMAC-SHA256 of its hash with the audit key (``key``, when a caller
    sealing or checking many rows derived it once). The hash covers the row and every link
    before it, so a seal vouches for the chain up to its row."""
    return hmac.new(key or conf.audit_key(), row_hash.encode(), hashlib.sha256).hexdigest()


def seal_sql(expression: str) -> tuple[str, list]:
    """``seal`` as SQL over a text ``expression``, for statements that compute the hash
    themselves: HMAC from PostgreSQL's own sha256() (RFC 2104, no extension needed). The
    parameters are the key's two padded forms, sent with the statement, never stored."""
    key = conf.audit_key()
    key = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    inner, outer = bytes(b ^ 0x36 for b in key), bytes(b ^ 0x5C for b in key)
    return (
        "encode(sha256(%s::bytea || "
        f"sha256(%s::bytea || convert_to({expression}, 'UTF8'))), 'hex')",
        [outer, inner],
    )


def body_around(row, holes: list[str], *, parent: str, fields: tuple[str, ...]) -> list[str]:
    """``row_body`` cut at values the database assigns in the statement that inserts the row
    (its chain_seq, the id of a row inserted beside it), which the row holds meanwhile as the
    marker strings ``holes``, in the order they appear. The body is the pieces joined by the
    holes' JSON values, so the statement can compute the digest itself
    (durable.runtime.store.live.record_signal). Markers are random: no stored value can spell
    one."""
    rest, pieces = row_body(row, parent=parent, fields=fields), []
    for hole in holes:
        piece, found, rest = rest.partition(json.dumps(hole))
        if not found:
            raise ValueError(
                f"{hole!r} is not among the row's chained values, after the holes before it"
            )
        pieces.append(piece)
    return [*pieces, rest]


def chained_models() -> list[type[ChainedAudit]]:
    return [model for model in apps.get_models() if issubclass(model, ChainedAudit)]


# --- migrations: fill the chain of rows written before it existed, then lock the table ---


def backfill_operation(label: str, *, parent: str, fields: tuple[str, ...]) -> RunPython:
    """Chain the rows already in the table, in the order they were written (created_at, id)."""

    def backfill(migration_apps, schema_editor):
        model = migration_apps.get_model(label)
        parent_attname = model._meta.get_field(parent).attname
        heads: dict = {}
        for row in model._base_manager.order_by(parent_attname, "created_at", "id").iterator():
            seq, prev = heads.get(getattr(row, parent_attname), (0, GENESIS))
            row.chain_seq, row.prev_hash = seq + 1, prev
            row.row_hash = row_digest(row, prev, parent=parent, fields=fields)
            model._base_manager.filter(pk=row.pk).update(
                chain_seq=row.chain_seq, prev_hash=row.prev_hash, row_hash=row.row_hash
            )
            heads[getattr(row, parent_attname)] = (row.chain_seq, row.row_hash)

    return RunPython(backfill, RunPython.noop)


def seal_operation(*labels: str) -> RunPython:
    """Seal the rows already in these tables (written before rows carried a seal) with the
    key the migration runs with: from then on, every row must carry a valid one. The tables
    are left as this finds them, their append-only triggers on (SQLite: installed again, as
    adding the column rebuilt the table without them)."""

    def seal_rows(migration_apps, schema_editor):
        connection = schema_editor.connection
        for label in labels:
            model = migration_apps.get_model(label)
            table, name = model._meta.db_table, trigger_name(model._meta.db_table)
            if connection.vendor == "postgresql":
                expression, params = seal_sql("row_hash")
                schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                schema_editor.execute(f'ALTER TABLE "{table}" DISABLE TRIGGER {name}')
                schema_editor.execute(
                    f"UPDATE \"{table}\" SET row_mac = {expression} WHERE row_mac = ''", params
                )
                schema_editor.execute(f'ALTER TABLE "{table}" ENABLE TRIGGER {name}')
                continue
            if connection.vendor == "sqlite":
                schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
            key = conf.audit_key()
            for row in model._base_manager.filter(row_mac="").only("pk", "row_hash").iterator():
                model._base_manager.filter(pk=row.pk).update(row_mac=seal(row.row_hash, key))
            for statement in (
                trigger_sql(connection.vendor, table) if connection.vendor == "sqlite" else []
            ):
                schema_editor.execute(statement, params=None)

    return RunPython(seal_rows, RunPython.noop)


def append_only_operation(table: str) -> RunPython:
    """Install the trigger that refuses changes to ``table`` (PostgreSQL: UPDATE and DELETE;
    SQLite: UPDATE)."""

    def install(migration_apps, schema_editor):
        for statement in trigger_sql(schema_editor.connection.vendor, table):
            schema_editor.execute(statement, params=None)  # the SQL holds literal % signs

    def remove(migration_apps, schema_editor):
        name = trigger_name(table)
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f'DROP TRIGGER IF EXISTS {name} ON "{table}"')
        elif schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")

    return RunPython(install, remove)


def trigger_name(table: str) -> str:
    return f"{table}_append_only"


def trigger_sql(vendor: str, table: str) -> list[str]:
    name = trigger_name(table)
    if vendor == "postgresql":
        return [
            """CREATE OR REPLACE FUNCTION durable_refuse_audit_change() RETURNS trigger
               LANGUAGE plpgsql AS $$
               BEGIN
                 RAISE EXCEPTION 'audit rows are append-only: % on % refused', TG_OP, TG_TABLE_NAME
                   USING ERRCODE = 'restrict_violation';
               END $$""",
            f'DROP TRIGGER IF EXISTS {name} ON "{table}"',
            f'CREATE TRIGGER {name} BEFORE UPDATE OR DELETE ON "{table}" '
            f"FOR EACH ROW EXECUTE FUNCTION durable_refuse_audit_change()",
        ]
    if vendor == "sqlite":
        return [
            f"DROP TRIGGER IF EXISTS {name}",
            f'CREATE TRIGGER {name} BEFORE UPDATE ON "{table}" '
            f"BEGIN SELECT RAISE(ABORT, 'audit rows are append-only: UPDATE refused'); END",
        ]
    return []


# --- verification: ``manage.py durable audit verify`` ---


@dataclass(frozen=True)
class Broken:
    """The first link of a chain that does not hold, and why."""

    table: str
    chain: str
    seq: int
    row_id: int | None
    reason: str

    def __str__(self):
        row = f" (row id {self.row_id})" if self.row_id is not None else ""
        return f"{self.table}: chain {self.chain!r} breaks at seq {self.seq}{row}: {self.reason}"


@dataclass(frozen=True)
class Head:
    """A chain's last link as exported outside the database at ``at``, from ``table``."""

    seq: int
    row_hash: str
    at: str
    table: str


@dataclass
class ChainReport:
    table: str
    chains: int = 0
    rows: int = 0
    guard: str = ""
    head_digest: str = ""
    broken: Broken | None = None
    unmatched: dict[str, Head] = field(
        default_factory=dict
    )  # exported chains this table does not hold


def trigger_state(model) -> str:
    """'enabled', 'disabled', 'missing' or 'none on this database' for the table's trigger."""
    table, name = model._meta.db_table, trigger_name(model._meta.db_table)
    connection = connections[router.db_for_write(model)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgenabled FROM pg_trigger WHERE tgname = %s AND tgrelid = %s::regclass",
                [name, f'"{table}"'],
            )
            found = cursor.fetchone()
            return "missing" if found is None else ("disabled" if found[0] == "D" else "enabled")
        if connection.vendor == "sqlite":
            cursor.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = %s", [name]
            )
            return "enabled" if cursor.fetchone() else "missing"
    return "none on this database"


def verify(model, *, expected: dict[str, Head] | None = None) -> ChainReport:
    """Walk every chain of one table in order; stop at the first link that does not hold.

    Each row's seal is checked with the key: a chain edited and hashed again without it
    breaks there. ``expected`` (chain -> the head exported earlier) catches what a chain
    cannot show alone: its newest rows cut, or a rewrite sealed with the key. The head digest
    (over every chain's last hash) is the same check by hand, with a digest noted elsewhere.
    """
    expected = expected or {}
    report = ChainReport(table=model._meta.db_table, guard=trigger_state(model))
    parent_attname = model._meta.get_field(model.chain_parent).attname
    heads = hashlib.sha256()
    chain, expected_seq, prev_hash = None, 0, GENESIS
    seen = set()

    def cut(chain_id: str, last_seq: int) -> Broken | None:
        want = expected.get(chain_id)
        if want is None or want.seq <= last_seq:
            return None
        return Broken(
            report.table,
            chain_id,
            want.seq,
            None,
            f"the heads exported at {want.at} reach seq {want.seq}, "
            f"the chain ends at seq {last_seq} (rows cut from its end)",
        )

    key = conf.audit_key()
    rows = model._base_manager.order_by(parent_attname, "chain_seq", "pk").iterator(chunk_size=2000)
    for row in rows:
        parent_id = str(getattr(row, parent_attname))
        if parent_id != chain:
            if chain is not None:
                heads.update(f"{chain}={prev_hash}\n".encode())
                report.broken = cut(chain, expected_seq - 1)
                if report.broken:
                    return report
            chain, expected_seq, prev_hash = parent_id, 1, GENESIS
            seen.add(chain)
            report.chains += 1
        report.rows += 1
        want = expected.get(chain)
        problem = None
        if row.chain_seq != expected_seq:
            problem = (
                f"expected seq {expected_seq}, found "
                f"{row.chain_seq} (a row is missing or was inserted)"
            )
        elif row.prev_hash != prev_hash:
            problem = "its previous-hash does not match the row before it"
        elif row.row_hash != row_digest(
            row, row.prev_hash, parent=model.chain_parent, fields=model.chained_fields
        ):
            problem = "its content does not match its hash (the row was altered)"
        elif not hmac.compare_digest(row.row_mac, seal(row.row_hash, key)):
            problem = (
                "its seal does not match its hash (hashed again without the audit key, "
                "or the key is not the one it was written with)"
            )
        elif want is not None and want.seq == row.chain_seq and want.row_hash != row.row_hash:
            problem = f"its hash is not the one exported at {want.at} (the chain was rewritten)"
        if problem:
            report.broken = Broken(report.table, chain, expected_seq, row.pk, problem)
            return report
        expected_seq, prev_hash = expected_seq + 1, row.row_hash
    if chain is not None:
        heads.update(f"{chain}={prev_hash}\n".encode())
        report.broken = cut(chain, expected_seq - 1)
    report.unmatched = {
        chain_id: head for chain_id, head in expected.items() if chain_id not in seen
    }
    report.head_digest = heads.hexdigest()
    return report
