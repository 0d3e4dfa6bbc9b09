"""The run list's order (newest first) from an index, built without locking out writes: on
PostgreSQL CONCURRENTLY (a deploy with millions of runs keeps advancing them meanwhile)."""
from django.db import migrations, models

INDEX = models.Index(fields=["created_at"], name="durable_run_created")


def create(apps, schema_editor):
    model = apps.get_model("durable", "WorkflowRun")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("CREATE INDEX CONCURRENTLY IF NOT EXISTS durable_run_created "
                              "ON durable_workflowrun (created_at)")
    else:
        schema_editor.add_index(model, INDEX)


def drop(apps, schema_editor):
    model = apps.get_model("durable", "WorkflowRun")
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX CONCURRENTLY IF EXISTS durable_run_created")
    else:
        schema_editor.remove_index(model, INDEX)


class Migration(migrations.Migration):
    atomic = False   # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("durable", "0019_audit_seal"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(create, drop)],
            state_operations=[migrations.AddIndex(model_name="workflowrun", index=INDEX)],
        ),
    ]
