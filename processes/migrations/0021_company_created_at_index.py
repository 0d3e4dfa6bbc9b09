"""An index on the companies' ``created_at``: the hourly cap on new senders counts the
companies of the last hour at every message from an unknown number, which scanned the whole
table. Built on PostgreSQL CONCURRENTLY (durable's helper), so a deploy over many companies
keeps taking messages meanwhile."""

from django.db import migrations, models

from durable.migrations._concurrently import create_index_concurrently

INDEX = models.Index(fields=["created_at"], name="company_created_at")


def create(apps, schema_editor):
    model = apps.get_model("processes", "Company")
    if schema_editor.connection.vendor == "postgresql":
        create_index_concurrently(
            schema_editor, INDEX.name, f"ON {model._meta.db_table} (created_at)"
        )
    else:
        schema_editor.add_index(model, INDEX)


def drop(apps, schema_editor):
    model = apps.get_model("processes", "Company")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {INDEX.name}")
    else:
        schema_editor.remove_index(model, INDEX)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("processes", "0020_inbound_changes_waiting_index"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(create, drop)],
            state_operations=[migrations.AddIndex(model_name="company", index=INDEX)],
        ),
    ]
