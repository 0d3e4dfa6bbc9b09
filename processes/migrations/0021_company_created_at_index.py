"""An index on the companies' ``created_at``: the hourly cap on new senders counts the
companies of the last hour at every message from an unknown number, which scanned the whole
table. Built on PostgreSQL CONCURRENTLY (durable's helper), so a deploy over many companies
keeps taking messages meanwhile."""

from django.db import migrations, models

from durable.migrations import _concurrently

INDEX = models.Index(fields=["created_at"], name="company_created_at")


def create(apps, schema_editor):
    _concurrently.add_index(apps, schema_editor, "processes", "Company", INDEX)


def drop(apps, schema_editor):
    _concurrently.remove_index(apps, schema_editor, "processes", "Company", INDEX)


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
