"""Partial indexes over the few runs that had a takeover (/metrics sums them), built on
PostgreSQL CONCURRENTLY: a deploy with millions of runs keeps advancing them meanwhile.
Apart from 0021's columns, so that a failed build leaves the columns recorded, and an
invalid index left by a failed build is dropped before it is built again."""

from django.db import migrations, models

from durable.migrations import _concurrently

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
        _concurrently.add_index(apps, schema_editor, "durable", model_name, index)


def drop(apps, schema_editor):
    for model_name, index in INDEXES.items():
        _concurrently.remove_index(apps, schema_editor, "durable", model_name, index)


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
