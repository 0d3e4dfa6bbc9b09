"""Statements the ORM cannot say in one round trip (PostgreSQL and SQLite both run them)."""
from django.db import connection


def insert_unless_exists(instance, *, conflict_field: str = "id", unless_in=None) -> bool:
    """INSERT ... ON CONFLICT DO NOTHING: True if the row was inserted, False if one with the
    same ``conflict_field`` existed (or, with ``unless_in``, another model's table has a row
    whose primary key is that value). One statement and no savepoint, so it is cheap inside
    a caller's transaction, and a race with a concurrent insert is settled by the database."""
    meta = instance._meta
    quote = connection.ops.quote_name
    fields = [f for f in meta.concrete_fields if not (f.primary_key and f.attname != conflict_field)]
    columns = ", ".join(quote(f.column) for f in fields)
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
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
        instance._state.adding = False
        instance._state.db = connection.alias
    return inserted
