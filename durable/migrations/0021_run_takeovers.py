"""Count each run's takeovers of an expired lease, for /metrics: a column the claim already
writes. The database default (0) lets code from before this migration insert runs between
the migrate and the restart of a rolling upgrade; 0022 builds the indexes."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("durable", "0020_run_created_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="archivedrun",
            name="takeovers",
            field=models.PositiveIntegerField(default=0, db_default=0),
        ),
        migrations.AddField(
            model_name="workflowrun",
            name="takeovers",
            field=models.PositiveIntegerField(default=0, db_default=0),
        ),
    ]
