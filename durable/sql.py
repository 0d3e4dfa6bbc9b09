"""Generic statements the ORM cannot say in one round trip, or says with more Python than
the hot paths can pay (a step, a finish, a signal). PostgreSQL and SQLite both run them.
They know no model of the engine: what they write on a run is said in durable.runtime.store.live."""

from django.db import connection, connections


def saved(instance, fields) -> tuple[str, list]:
    """The quoted column list and the values an INSERT of ``instance`` writes for ``fields``."""
    quote = connection.ops.quote_name
    return (
        ", ".join(quote(f.column) for f in fields),
        [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields],
    )


def stored(instance) -> None:
    instance._state.adding = False
    instance._state.db = connection.alias


def insert_unless_exists(instance, *, conflict_field: str = "id", unless_in=None) -> bool:
    """INSERT ... ON CONFLICT DO NOTHING: True if the row was inserted, False if one with the
    same ``conflict_field`` existed (or, with ``unless_in``, another model's table has a row
    whose primary key is that value). One statement and no savepoint, so it is cheap inside
    a caller's transaction, and a race with a concurrent insert is settled by the database."""
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [
        f for f in meta.concrete_fields if not (f.primary_key and f.attname != conflict_field)
    ]
    columns, values = saved(instance, fields)
    conflict_column = quote(meta.get_field(conflict_field).column)
    if unless_in is None:
        source = f"VALUES ({', '.join(['%s'] * len(fields))})"
    else:  # SQLite needs the WHERE to read ON CONFLICT as the upsert clause; it is there
        other = unless_in._meta
        source = (
            f"SELECT {', '.join(['%s'] * len(fields))} WHERE NOT EXISTS (SELECT 1 FROM "
            f"{quote(other.db_table)} WHERE {quote(other.pk.column)} = %s)"
        )
        values.append(getattr(instance, conflict_field))
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) {source} "
        f"ON CONFLICT ({conflict_column}) DO NOTHING RETURNING 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        inserted = cursor.fetchone() is not None
    if inserted:
        stored(instance)
    return inserted


def insert(instance) -> None:
    """A plain INSERT ... RETURNING of a new row whose primary key the database assigns, set
    on the instance: ``Model.objects.create`` without the ORM's per-call machinery (about
    0.3 ms of Python here). No signals are sent: the engine's models have none."""
    if instance.pk is not None:
        raise ValueError(f"{instance!r} has a primary key already: save it through the ORM")
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns, values = saved(instance, fields)
    sql = (
        f"INSERT INTO {quote(meta.db_table)} ({columns}) "
        f"VALUES ({', '.join(['%s'] * len(fields))}) "
        f"RETURNING {quote(meta.pk.column)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        instance.pk = cursor.fetchone()[0]
    stored(instance)


def select(model, condition: str, params: list) -> list:
    """Every column of ``model``'s rows that ``condition`` selects, as instances. The ORM's
    ``filter()`` built and compiled the query on every call: a resume's two reads took 0.56
    and 1.84 ms (back to back, and 20 ms apart) through it, 0.20 and 0.79 ms this way."""
    fields = model._meta.concrete_fields
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {', '.join(quote(f.column) for f in fields)} "
            f"FROM {quote(model._meta.db_table)} "
            f"WHERE {condition}",
            params,
        )
        return instances(model, fields, cursor.fetchall())


def distinct_values(model, column: str) -> list:
    """The distinct values of a column that leads an index, one index probe each (a loose
    index scan, by a recursive query): SELECT DISTINCT reads every row, 90 ms a filter at a
    million runs, and ten times that at ten million."""
    quote = connection.ops.quote_name
    table, col = quote(model._meta.db_table), quote(column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"WITH RECURSIVE found(value) AS ("
            f"SELECT (SELECT {col} FROM {table} ORDER BY {col} LIMIT 1) UNION ALL "
            f"SELECT (SELECT {col} FROM {table} WHERE {col} > found.value ORDER BY {col} LIMIT 1) "
            f"FROM found WHERE found.value IS NOT NULL) "
            f"SELECT value FROM found WHERE value IS NOT NULL"
        )
        return [row[0] for row in cursor.fetchall()]


def table_estimate(queryset) -> int | None:
    """The planner's row estimate of the queryset's table (PostgreSQL's ``pg_class.reltuples``,
    kept by autovacuum and ANALYZE), or None where there is none (SQLite, a never-analysed
    table)."""
    connection = connections[queryset.db]
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass(%s)",
            [queryset.model._meta.db_table],
        )
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None and row[0] >= 0 else None


def instances(model, fields, rows) -> list:
    """Model instances of ``rows`` (values of ``fields``, in order, as the database gave
    them), through the same converters the ORM applies (JSON, datetimes, SQLite's decimals)."""
    table = model._meta.db_table
    expressions = [field.get_col(table) for field in fields]
    converters = [
        (
            expression,
            connection.ops.get_db_converters(expression) + expression.get_db_converters(connection),
        )
        for expression in expressions
    ]
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
        cursor.execute(
            f"SELECT chain_seq, row_hash FROM {quote(model._meta.db_table)} "
            f"WHERE {quote(parent_column)} = %s "
            f"ORDER BY chain_seq DESC LIMIT 1",
            [parent_id],
        )
        return cursor.fetchone()


def chain_heads(model, parent_column: str) -> list[tuple[str, int, str]]:
    """(parent id, chain_seq, row_hash) of the last link of every chain in an audit table."""
    quote = connection.ops.quote_name
    table, parent = quote(model._meta.db_table), quote(parent_column)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT link.{parent}, link.chain_seq, link.row_hash FROM {table} link "
            f"JOIN (SELECT {parent} AS parent, MAX(chain_seq) AS seq FROM {table} "
            f"GROUP BY {parent}) head "
            f"ON link.{parent} = head.parent AND link.chain_seq = head.seq ORDER BY link.{parent}"
        )
        return [(str(parent_id), seq, row_hash) for parent_id, seq, row_hash in cursor.fetchall()]


def update_row(model, pk, values: dict, **where) -> int:
    """UPDATE one row by primary key, only if the ``where`` columns still hold those values:
    the fenced finish of every advance (``LiveStore._persist``). The ORM's ``update()`` built
    the same statement with about 1 ms of Python more per call; plain values only."""
    meta = model._meta
    quote = connection.ops.quote_name
    assigned = [meta.get_field(name) for name in values]
    conditions = [meta.get_field(name) for name in where]
    sql = (
        f"UPDATE {quote(meta.db_table)} SET "
        f"{', '.join(f'{quote(f.column)} = %s' for f in assigned)} "
        f"WHERE {quote(meta.pk.column)} = %s"
        + "".join(f" AND {quote(f.column)} = %s" for f in conditions)
    )
    params = [f.get_db_prep_save(values[f.name], connection) for f in assigned]
    params += [pk, *(f.get_db_prep_save(where[f.name], connection) for f in conditions)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
