"""Statements the ORM cannot say in one round trip, or says with more Python than the hot
paths can pay (a step, a finish, a signal). PostgreSQL and SQLite both run them."""
import secrets

from django.db import connection


def _saved(instance, fields) -> tuple[str, list]:
    """The quoted column list and the values an INSERT of ``instance`` writes for ``fields``."""
    quote = connection.ops.quote_name
    return (", ".join(quote(f.column) for f in fields),
            [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields])


def _stored(instance) -> None:
    instance._state.adding = False
    instance._state.db = connection.alias


def insert_unless_exists(instance, *, conflict_field: str = "id", unless_in=None) -> bool:
    """INSERT ... ON CONFLICT DO NOTHING: True if the row was inserted, False if one with the
    same ``conflict_field`` existed (or, with ``unless_in``, another model's table has a row
    whose primary key is that value). One statement and no savepoint, so it is cheap inside
    a caller's transaction, and a race with a concurrent insert is settled by the database."""
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if not (f.primary_key and f.attname != conflict_field)]
    columns, values = _saved(instance, fields)
    conflict_column = quote(meta.get_field(conflict_field).column)
    if unless_in is None:
        source = f"VALUES ({', '.join(['%s'] * len(fields))})"
    else:  # SQLite needs the WHERE to read ON CONFLICT as the upsert clause; it is there
        other = unless_in._meta
        source = (f"SELECT {', '.join(['%s'] * len(fields))} WHERE NOT EXISTS (SELECT 1 FROM "
                  f"{quote(other.db_table)} WHERE {quote(other.pk.column)} = %s)")
        values.append(getattr(instance, conflict_field))
    sql = (f"INSERT INTO {quote(meta.db_table)} ({columns}) {source} "
           f"ON CONFLICT ({conflict_column}) DO NOTHING RETURNING 1")
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        inserted = cursor.fetchone() is not None
    if inserted:
        _stored(instance)
    return inserted


def wake_runs(run_ids, *, now, by, **also) -> int:
    """Wake the unfinished runs among ``run_ids``: the one "wake the run" write of the engine.

    ``signal_seq`` goes up, so a worker about to park one of them (``Lease.finish`` with
    ``check_signal_seq``) looks again and no wake-up is lost; ``wake_at`` comes forward to
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
    from durable.models import FINISHED_STATUSES, WorkflowRun

    meta, quote = WorkflowRun._meta, connection.ops.quote_name
    at = meta.get_field("wake_at")
    fields = [meta.get_field(name) for name in also]
    sets = "".join(f", {quote(field.column)} = %s" for field in fields)
    statement = (f"UPDATE {quote(meta.db_table)} SET signal_seq = signal_seq + 1, updated_at = %s, "
                 f"wake_at = CASE WHEN wake_at IS NULL OR wake_at > %s THEN %s ELSE wake_at END{sets} "
                 f"WHERE id IN ({', '.join(['%s'] * len(run_ids))}) "
                 f"AND status NOT IN ({', '.join(['%s'] * len(FINISHED_STATUSES))})")
    now, by = at.get_db_prep_save(now, connection), at.get_db_prep_save(by, connection)
    values = [field.get_db_prep_save(value, connection) for field, value in zip(fields, also.values())]
    return statement, [now, by, by, *values, *run_ids, *FINISHED_STATUSES]


def record_signal(signal, event, now, grace) -> bool:
    """signal_send's writes: wake the unfinished run (bump ``signal_seq``, which locks the row,
    and bring ``wake_at`` forward to ``grace`` unless it is sooner) and, only if it was woken,
    insert ``signal`` and ``event``, its audit row, naming it (``signal_id`` in the detail) at
    the end of the run's audit chain. False, with nothing written, when the run is finished
    or missing.

    On PostgreSQL one statement, which computes the audit row's link and digest itself (the
    sender's call is a figure of issue 17): outside a transaction it needs no BEGIN or COMMIT.
    It reads the chain's head in its snapshot, taken before it waited for the run's row: a
    writer that held the row meanwhile appended a link it did not see, and the unique (run,
    chain_seq) constraint refuses the row (IntegrityError, nothing written). The caller then
    locks the run and calls again. SQLite allows no writes in a WITH, and serialises writers:
    there it is the UPDATE, the INSERT and the audit row's own save."""
    from durable import chain

    quote = connection.ops.quote_name
    wake, params = _wake_statement([signal.run_id], now=now, by=grace)
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(wake, params)
            woken = cursor.rowcount
        if woken:
            insert(signal)
            event.detail = {**event.detail, "signal_id": signal.pk}
            event.save(parent_locked=True)
        return bool(woken)

    signal_fields = [f for f in signal._meta.concrete_fields if not f.primary_key]
    signal_columns, signal_values = _saved(signal, signal_fields)
    audit = event._meta
    detail, seq = event.detail, event.chain_seq
    seq_hole, id_hole = (f"durable-hole-{secrets.token_hex(8)}" for _ in range(2))
    event.chain_seq, event.detail = seq_hole, {**detail, "signal_id": id_hole}
    head, middle, tail = chain.body_around(event, [seq_hole, id_hole], parent=event.chain_parent,
                                           fields=event.chained_fields)
    event.chain_seq, event.detail = seq, detail
    column = {name: quote(audit.get_field(name).column)
              for name in (event.chain_parent, "action", "actor", "detail", "created_at",
                           "chain_seq", "prev_hash", "row_hash")}
    sql = (f"WITH woken AS ({wake} RETURNING 1), "
           f"sent AS (INSERT INTO {quote(signal._meta.db_table)} ({signal_columns}) "
           f"SELECT {', '.join(['%s'] * len(signal_fields))} FROM woken RETURNING {quote(signal._meta.pk.column)} AS id), "
           f"head AS (SELECT {column['chain_seq']} AS seq, {column['row_hash']} AS hash FROM {quote(audit.db_table)} "
           f"WHERE {column[event.chain_parent]} = %s ORDER BY {column['chain_seq']} DESC LIMIT 1), "
           f"link AS (SELECT sent.id, COALESCE(head.seq, 0) + 1 AS seq, COALESCE(head.hash, %s) AS prev "
           f"FROM sent LEFT JOIN head ON TRUE) "
           f"INSERT INTO {quote(audit.db_table)} ({', '.join(column.values())}) "
           f"SELECT %s, %s, %s, %s::jsonb || jsonb_build_object('signal_id', link.id), %s, link.seq, link.prev, "
           f"encode(sha256(convert_to(link.prev || %s::text || link.seq::text || %s::text || link.id::text "
           f"|| %s::text, 'UTF8')), 'hex') FROM link "
           f"RETURNING ({column['detail']} ->> 'signal_id')::bigint, {quote(audit.pk.column)}, "
           f"{column['chain_seq']}, {column['prev_hash']}, {column['row_hash']}")
    created_at = audit.get_field("created_at")
    params += [*signal_values, signal.run_id, chain.GENESIS,
               event.run_id, event.action, event.actor, audit.get_field("detail").get_db_prep_save(detail, connection),
               created_at.get_db_prep_save(event.created_at, connection), "\n" + head, middle, tail]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return False
    signal.pk, event.pk, event.chain_seq, event.prev_hash, event.row_hash = row
    event.detail = {**detail, "signal_id": signal.pk}
    _stored(signal)
    _stored(event)
    return True


def pick_due(horizon, until, limit: int) -> list[tuple[str, object, str]]:
    """The sweep's pick: up to ``limit`` active runs whose ``wake_at`` is at or before
    ``horizon``, soonest first, their ``wake_at`` moved to ``until`` (so the next tick leaves
    them alone while their message is in flight). Returns (id, the wake_at it had, status):
    a running one is a takeover, its lease expired.

    On PostgreSQL one statement (an UPDATE over a ``SELECT ... FOR UPDATE SKIP LOCKED``:
    two sweeps never pick one run), which outside a transaction needs no BEGIN or COMMIT: a
    tick that finds nothing is one round trip, every second. Elsewhere the SELECT, then the
    UPDATE, in the caller's transaction (SQLite serialises writers)."""
    from durable.models import ACTIVE_STATUSES, WorkflowRun

    at = WorkflowRun._meta.get_field("wake_at")
    horizon, until = at.get_db_prep_save(horizon, connection), at.get_db_prep_save(until, connection)
    table, statuses = connection.ops.quote_name(WorkflowRun._meta.db_table), ", ".join(["%s"] * len(ACTIVE_STATUSES))
    due = f"SELECT id, wake_at, status FROM {table} WHERE wake_at <= %s AND status IN ({statuses}) ORDER BY wake_at LIMIT %s"
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.execute(due, [horizon, *ACTIVE_STATUSES, limit])
            picked = cursor.fetchall()
            if picked:
                cursor.execute(f"UPDATE {table} SET wake_at = %s WHERE id IN ({', '.join(['%s'] * len(picked))})",
                               [until, *(run_id for run_id, _, _ in picked)])
        else:
            cursor.execute(f"UPDATE {table} AS run SET wake_at = %s FROM ({due} FOR UPDATE SKIP LOCKED) AS due "
                           f"WHERE run.id = due.id RETURNING run.id, due.wake_at, due.status",
                           [until, horizon, *ACTIVE_STATUSES, limit])
            picked = cursor.fetchall()
    expression = at.get_col(WorkflowRun._meta.db_table)
    converters = connection.ops.get_db_converters(expression)
    rows = []
    for run_id, wake_at, status in picked:
        for converter in converters:
            wake_at = converter(wake_at, expression, connection)
        rows.append((run_id, wake_at, status))
    return sorted(rows, key=lambda row: row[1])


def insert(instance) -> None:
    """A plain INSERT ... RETURNING of a new row whose primary key the database assigns, set
    on the instance: ``Model.objects.create`` without the ORM's per-call machinery (about
    0.3 ms of Python here). No signals are sent: the engine's models have none."""
    if instance.pk is not None:
        raise ValueError(f"{instance!r} has a primary key already: save it through the ORM")
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns, values = _saved(instance, fields)
    sql = (f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({', '.join(['%s'] * len(fields))}) "
           f"RETURNING {quote(meta.pk.column)}")
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        instance.pk = cursor.fetchone()[0]
    _stored(instance)


def journal_of(run_id: str) -> list:
    """The run's journal entries (a resume's first read)."""
    from durable.models import JournalEntry

    return _select(JournalEntry, "run_id = %s", [run_id])


def pending_signals_of(run_id: str) -> list:
    """The run's signals no wait has taken yet, oldest first (a resume's second read)."""
    from durable.models import Signal

    return _select(Signal, "run_id = %s AND consumed_position IS NULL ORDER BY id", [run_id])


def _select(model, condition: str, params: list) -> list:
    """Every column of ``model``'s rows that ``condition`` selects, as instances. The ORM's
    ``filter()`` built and compiled the query on every call: a resume's two reads took 0.56
    and 1.84 ms (back to back, and 20 ms apart) through it, 0.20 and 0.79 ms this way."""
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {', '.join(quote(f.column) for f in fields)} FROM {quote(model._meta.db_table)} "
                       f"WHERE {condition}", params)
        return instances(model, fields, cursor.fetchall())


def instances(model, fields, rows) -> list:
    """Model instances of ``rows`` (values of ``fields``, in order, as the database gave
    them), through the same converters the ORM applies (JSON, datetimes, SQLite's decimals)."""
    table = model._meta.db_table
    expressions = [field.get_col(table) for field in fields]
    converters = [(expression, connection.ops.get_db_converters(expression)
                   + expression.get_db_converters(connection)) for expression in expressions]
    names = [field.attname for field in fields]
    found = []
    for row in rows:
        values = []
        for (expression, field_converters), value in zip(converters, row):
            for converter in field_converters:
                value = converter(value, expression, connection)
            values.append(value)
        found.append(model.from_db(connection.alias, names, values))
    return found


def last_link(model, parent_column: str, parent_id) -> tuple[int, str] | None:
    """The (chain_seq, row_hash) that ends one parent's audit chain (durable/chain.py), or None."""
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT chain_seq, row_hash FROM {quote(model._meta.db_table)} WHERE {quote(parent_column)} = %s "
                       f"ORDER BY chain_seq DESC LIMIT 1", [parent_id])
        return cursor.fetchone()


def update_row(model, pk, values: dict, **where) -> int:
    """UPDATE one row by primary key, only if the ``where`` columns still hold those values:
    the fenced finish of every advance (``Lease._persist``). The ORM's ``update()`` built
    the same statement with about 1 ms of Python more per call; plain values only."""
    meta = model._meta
    quote = connection.ops.quote_name
    assigned = [meta.get_field(name) for name in values]
    conditions = [meta.get_field(name) for name in where]
    sql = (f"UPDATE {quote(meta.db_table)} SET {', '.join(f'{quote(f.column)} = %s' for f in assigned)} "
           f"WHERE {quote(meta.pk.column)} = %s"
           + "".join(f" AND {quote(f.column)} = %s" for f in conditions))
    params = [f.get_db_prep_save(values[f.name], connection) for f in assigned]
    params += [pk, *(f.get_db_prep_save(where[f.name], connection) for f in conditions)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
