"""Index builds for the migrations that must not lock a table of millions of rows (durable
0022 and 0023, processes 0021).

The migration loader skips a module whose name starts with an underscore: this one is a
helper, not a migration.
"""


def create_index_concurrently(schema_editor, name: str, definition: str) -> None:
    """``CREATE INDEX CONCURRENTLY IF NOT EXISTS <name> <definition>`` on PostgreSQL, in a
    migration with ``atomic = False``: for an index Django's model state cannot hold (0023's
    expression with an operator class)."""
    _drop_if_invalid(schema_editor, name)
    schema_editor.execute(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} {definition}")


def add_index(apps, schema_editor, app_label: str, model_name: str, index) -> None:
    """Build a model's ``index`` from a migration's RunPython (``atomic = False``): on
    PostgreSQL CONCURRENTLY, and only if it is not there already; elsewhere as Django would.
    The SQL is Django's for the index, so it cannot drift from the model's state. The
    migration keeps top-level functions calling this one, so that it can still be squashed."""
    model = apps.get_model(app_label, model_name)
    if schema_editor.connection.vendor != "postgresql":
        schema_editor.add_index(model, index)
    elif not _drop_if_invalid(schema_editor, index.name):
        schema_editor.add_index(model, index, concurrently=True)


def remove_index(apps, schema_editor, app_label: str, model_name: str, index) -> None:
    """The reverse of ``add_index``."""
    model = apps.get_model(app_label, model_name)
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.remove_index(model, index, concurrently=True)
    else:
        schema_editor.remove_index(model, index)


def _drop_if_invalid(schema_editor, name: str) -> bool:
    """Drop an index of that name left invalid by a build that failed half-way (``IF NOT
    EXISTS`` alone would keep it, unused); whether a valid one is there."""
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
    if row and not row[0]:
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
    return bool(row and row[0])
