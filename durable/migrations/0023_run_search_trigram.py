"""Trigram indexes for the admin's run search (durable/surfaces/admin/search.py), on PostgreSQL.

A substring search over a million runs' ids and attributes read every run (1.8 s); with a GIN
trigram index over the one expression the search matches, a selective word takes about 20 ms.
``pg_trgm`` is a trusted extension (PostgreSQL 13+): the database's owner may create it. When
the role may not, the migration says so and goes on: the search stays correct, unindexed,
until a superuser runs ``CREATE EXTENSION pg_trgm`` and the migration is run again
(``migrate durable 0022`` then ``migrate``). Built CONCURRENTLY, as 0022's: runs advance
meanwhile. Django's model state does not hold these indexes (an expression with an operator
class is PostgreSQL's alone); SQLite gets none.
"""

import sys

from django.db import DatabaseError, migrations

from durable.migrations._concurrently import create_index_concurrently

# The expression search.py matches, as it was when these indexes were built: a change there
# needs a migration of its own (tests/durable/test_admin_search.py sees the index used).
SEARCH_TEXT = "((id)::text || ' ' || (attributes)::text)"
INDEXES = {
    "durable_run_search": "durable_workflowrun",
    "durable_archived_search": "durable_archivedrun",
}


def create(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    try:
        schema_editor.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DatabaseError as refused:  # autocommit (atomic = False): nothing to roll back
        sys.stderr.write(
            f"durable: the run search stays unindexed: pg_trgm could not be created ({refused})\n"
        )
        return
    quote = schema_editor.connection.ops.quote_name
    for name, table in INDEXES.items():
        create_index_concurrently(
            schema_editor, name, f"ON {quote(table)} USING gin ({SEARCH_TEXT} gin_trgm_ops)"
        )


def drop(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for name in INDEXES:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("durable", "0022_run_takeovers_indexes"),
    ]

    operations = [migrations.RunPython(create, drop, elidable=False)]
