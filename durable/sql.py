"""Statements the ORM cannot say in one round trip, or says with more Python than the hot
paths can pay (a step, a finish, a signal). PostgreSQL and SQLite both run them."""
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


def wake_and_insert_signal(signal, now, grace) -> bool:
    """signal_send's writes: wake the unfinished run (bump ``signal_seq``, which locks the row,
    and bring ``wake_at`` forward to ``grace`` unless it is sooner) and, only if it was woken,
    insert ``signal``. False, with nothing written, when the run is finished or missing.

    On PostgreSQL one statement (the UPDATE in a WITH): a statement and a round trip fewer
    per signal, the sender's call being a figure of issue 17. SQLite allows no writes in a
    WITH: there it is the UPDATE, then the INSERT. The ORM says the UPDATE too, but building
    it (``Least``, ``Coalesce``, ``exclude``) cost 0.7 ms of Python per call."""
    from durable.models import FINISHED_STATUSES, WorkflowRun

    quote = connection.ops.quote_name
    at = WorkflowRun._meta.get_field("wake_at")
    now, grace = at.get_db_prep_save(now, connection), at.get_db_prep_save(grace, connection)
    wake = (f"UPDATE {quote(WorkflowRun._meta.db_table)} SET signal_seq = signal_seq + 1, updated_at = %s, "
            f"wake_at = CASE WHEN wake_at IS NULL OR wake_at > %s THEN %s ELSE wake_at END "
            f"WHERE id = %s AND status NOT IN ({', '.join(['%s'] * len(FINISHED_STATUSES))})")
    params = [now, grace, grace, signal.run_id, *FINISHED_STATUSES]
    if connection.vendor != "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(wake, params)
            woken = cursor.rowcount
        if woken:
            insert(signal)
        return bool(woken)
    meta = signal._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns, values = _saved(signal, fields)
    sql = (f"WITH woken AS ({wake} RETURNING 1) INSERT INTO {quote(meta.db_table)} ({columns}) "
           f"SELECT {', '.join(['%s'] * len(fields))} FROM woken RETURNING {quote(meta.pk.column)}")
    with connection.cursor() as cursor:
        cursor.execute(sql, params + values)
        row = cursor.fetchone()
    if row is None:
        return False
    signal.pk = row[0]
    _stored(signal)
    return True


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
