"""An index on the companies' ``created_at``: the hourly cap on new senders counts the
companies of the last hour at every message from an unknown number, which scanned the whole
table. Built on PostgreSQL CONCURRENTLY (durable's helper), so a deploy over many companies
keeps taking messages meanwhile."""

from django.db import migrations, models

from durable.migrations._concurrently import add_index_concurrently


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("processes", "0020_inbound_changes_waiting_index"),
    ]

    operations = [
        add_index_concurrently(
            "processes",
            "Company",
            models.Index(fields=["created_at"], name="company_created_at"),
            "ON processes_company (created_at)",
        ),
    ]
