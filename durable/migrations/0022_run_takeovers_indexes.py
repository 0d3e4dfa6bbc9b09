"""Partial indexes over the few runs that had a takeover (/metrics sums them), built on
PostgreSQL CONCURRENTLY: a deploy with millions of runs keeps advancing them meanwhile.
Apart from 0021's columns, so that a failed build leaves the columns recorded, and an
invalid index left by a failed build is dropped before it is built again."""

from django.db import migrations, models

from durable.migrations._concurrently import create_index_concurrently

INDEXES = {
    "WorkflowRun": models.Index(
        condition=models.Q(takeovers__gt=0), fields=["workflow_name"], name="durable_run_taken_over"
    ),
    "ArchivedRun": models.Index(
        condition=models.Q(takeovers__gt=0),
        fields=["workflow_name"],
        name="durable_archived_taken_over",
    ),
}


def create(apps, schema_editor):
    for model_name, index in INDEXES.items():
        model = apps.get_model("durable", model_name)
        if schema_editor.connection.vendor == "postgresql":
            create_index_concurrently(
                schema_editor,
                index.name,
                f"ON {model._meta.db_table} (workflow_name) WHERE takeovers > 0",
            )
        else:
            schema_editor.add_index(model, index)


def drop(apps, schema_editor):
    for model_name, index in INDEXES.items():
        model = apps.get_model("durable", model_name)
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index.name}")
        else:
            schema_editor.remove_index(model, index)


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY cannot run in a transaction

    dependencies = [
        ("durable", "0021_run_takeovers"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(create, drop)],
            state_operations=[
                migrations.AddIndex(model_name="archivedrun", index=INDEXES["ArchivedRun"]),
                migrations.AddIndex(model_name="workflowrun", index=INDEXES["WorkflowRun"]),
            ],
        ),
    ]
