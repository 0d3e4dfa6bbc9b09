"""The privileges of the role the app runs as, when another role owns the tables: all it
needs on every table, and on the audit tables only SELECT and INSERT. Only a table's owner
(or a superuser) can disable its triggers or skip them, so the role that serves requests
and runs workers can add audit rows but never change, delete or empty them."""

from django.db import connections

from durable import chain

MIGRATIONS_TABLE = "django_migrations"


class RolesUnsupported(ValueError):
    """Raised where the database has no roles to grant to (SQLite)."""


def grant_statements(app_role: str, *, using: str = "default") -> list[str]:
    """GRANT statements for ``app_role`` on every table of the database as migrated now,
    each table's earlier grants revoked first, so running them again after a migration is
    how a new table gets its grants. Rows of an audit table with an archive may be deleted
    once their copy is there: its trigger checks that (durable/migrations/0009_archive.py)."""
    connection = connections[using]
    if connection.vendor != "postgresql":
        raise RolesUnsupported(f"roles are PostgreSQL's; this database is {connection.vendor}")
    if not app_role or '"' in app_role or "\0" in app_role:
        raise RolesUnsupported(f"not a role name: {app_role!r}")
    quote, role = connection.ops.quote_name, connection.ops.quote_name(app_role)
    audit = {model._meta.db_table: model for model in chain.chained_models()}
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_database(), current_schema()")
        database, schema = cursor.fetchone()
        tables = connection.introspection.table_names(cursor)
    statements = [
        f"GRANT CONNECT ON DATABASE {quote(database)} TO {role}",
        f"GRANT USAGE ON SCHEMA {quote(schema)} TO {role}",
    ]
    for table in sorted(tables):
        statements.append(f"REVOKE ALL ON TABLE {quote(table)} FROM {role}")
        if table in audit:
            granted = "SELECT, INSERT, DELETE" if audit[table].archived_in else "SELECT, INSERT"
        elif table == MIGRATIONS_TABLE:
            granted = "SELECT"
        else:
            granted = "SELECT, INSERT, UPDATE, DELETE"
        statements.append(f"GRANT {granted} ON TABLE {quote(table)} TO {role}")
    statements.append(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {quote(schema)} TO {role}")
    return statements


def apply_grants(app_role: str, *, using: str = "default") -> list[str]:
    """Run ``grant_statements`` on the connection, which must be the tables' owner's."""
    statements = grant_statements(app_role, using=using)
    with connections[using].cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    return statements
