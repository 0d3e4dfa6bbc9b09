"""Index builds for the migrations that must not lock a table of millions of rows (durable
0022 and 0023, processes 0021).

The migration loader skips a module whose name starts with an underscore: this one is a
helper, not a migration.
"""


def create_index_concurrently(schema_editor, name: str, definition: str) -> None:
    """``CREATE INDEX CONCURRENTLY IF NOT EXISTS <name> <definition>`` on PostgreSQL, in a
    migration with ``atomic = False``. An invalid index of that name, left by a build that
    failed half-way, is dropped first: ``IF NOT EXISTS`` alone would keep it, unused."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "SELECT NOT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name]
        )
        invalid = cursor.fetchone()
    if invalid and invalid[0]:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    schema_editor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} {definition}")


def add_index(apps, schema_editor, app_label: str, model_name: str, index, definition: str):
    """Build ``index`` for a migration's RunPython: on PostgreSQL CONCURRENTLY from
    ``definition`` (``ON <table> (...)``), elsewhere as Django would. The migration keeps its
    own top-level functions calling this one, so that it can still be squashed."""
    if schema_editor.connection.vendor == "postgresql":
        create_index_concurrently(schema_editor, index.name, definition)
    else:
        schema_editor.add_index(apps.get_model(app_label, model_name), index)


def remove_index(apps, schema_editor, app_label: str, model_name: str, index):
    """The reverse of ``add_index``."""
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
    else:
        schema_editor.remove_index(apps.get_model(app_label, model_name), index)
