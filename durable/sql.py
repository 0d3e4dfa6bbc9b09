"""Statements the ORM cannot say in one round trip (PostgreSQL and SQLite both run them)."""
from django.db import connection


def insert_unless_exists(instance, *, conflict_field: str = "id") -> bool:
    """INSERT ... ON CONFLICT DO NOTHING: True if the row was inserted, False if one with the
    same ``conflict_field`` existed. No savepoint, so it is cheap inside a caller's
    transaction, and a race with a concurrent insert is settled by the database."""
    meta = instance._meta
    fields = [f for f in meta.concrete_fields if not (f.primary_key and f.attname != conflict_field)]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    values = [f.get_db_prep_save(f.pre_save(instance, True), connection) for f in fields]
    sql = (f"INSERT INTO {connection.ops.quote_name(meta.db_table)} ({columns}) "
           f"VALUES ({', '.join(['%s'] * len(fields))}) "
           f"ON CONFLICT ({connection.ops.quote_name(meta.get_field(conflict_field).column)}) DO NOTHING "
           f"RETURNING 1")
    with connection.cursor() as cursor:
        cursor.execute(sql, values)
        inserted = cursor.fetchone() is not None
    if inserted:
        instance._state.adding = False
        instance._state.db = connection.alias
    return inserted
