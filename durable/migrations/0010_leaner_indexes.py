"""Fewer indexes on the hot tables (issue 17): each one is written at every step, claim,
park, finish and signal. Dropped: the journal's, signals' and audit rows' own run_id
indexes (their unique or pending indexes lead with run_id), the standalone workflow_name
index (durable_run_wf_status leads with it), and on PostgreSQL the varchar_pattern_ops
twins that db_index and a text primary key add for LIKE 'x%', which no query here makes.
Measured with benchmarks/write_volume.py, before and after: WAL per step 569 -> 422
bytes, per signal_send 2,339 -> 1,579 (with its one-statement wake-up), database size per
waiting run 703 -> 502 bytes (docs/benchmarks.md, 2026-12-02).

On a large database this migration rebuilds two small indexes and re-validates three
foreign keys (Django drops and re-adds a constraint whose field changes): run it in a
quiet moment.
"""
import django.db.models.deletion
import django_fsm
from django.db import migrations, models


# SQLite alters a field by copying its table, and the copy has none of the old table's
# triggers: the audit table's append-only trigger is installed again after. The SQL is
# frozen here, as in 0004, whatever durable/chain.py says later. PostgreSQL alters in place
# and keeps its trigger (the archive-aware one of 0009), which must not be replaced.
SQLITE_APPEND_ONLY = [
    "DROP TRIGGER IF EXISTS durable_auditevent_append_only",
    'CREATE TRIGGER durable_auditevent_append_only BEFORE UPDATE ON "durable_auditevent" '
    "BEGIN SELECT RAISE(ABORT, 'audit rows are append-only: UPDATE refused'); END",
]


def audit_append_only_again_on_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_APPEND_ONLY:
            schema_editor.execute(statement, params=None)


def drop_primary_key_like_index(apps, schema_editor):
    """The run id's LIKE twin: Django names it by a hash, so it is found, not named."""
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'durable_workflowrun' "
                       "AND indexdef LIKE %s", ["%(id varchar_pattern_ops)%"])
        for (name,) in cursor.fetchall():
            cursor.execute(f'DROP INDEX IF EXISTS "{name}"')


def recreate_primary_key_like_index(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute('CREATE INDEX IF NOT EXISTS "durable_workflowrun_id_like" '
                              'ON "durable_workflowrun" ("id" varchar_pattern_ops)')


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0009_archive'),
    ]

    operations = [
        # Unmigrating copies the table back: this runs last then, and installs it again.
        migrations.RunPython(migrations.RunPython.noop, audit_append_only_again_on_sqlite),
        migrations.AlterField(
            model_name='auditevent',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.PROTECT, related_name='audit_events', to='durable.workflowrun'),
        ),
        migrations.AlterField(
            model_name='journalentry',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='journal', to='durable.workflowrun'),
        ),
        migrations.AlterField(
            model_name='signal',
            name='run',
            field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE, related_name='signals', to='durable.workflowrun'),
        ),
        migrations.AlterField(
            model_name='workflowrun',
            name='parent',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='children', to='durable.workflowrun'),
        ),
        migrations.AlterField(
            model_name='workflowrun',
            name='status',
            field=django_fsm.FSMField(choices=[('pending', 'Pending'), ('running', 'Running'), ('waiting', 'Waiting'), ('completed', 'Completed'), ('failed', 'Failed'), ('cancelled', 'Cancelled'), ('blocked', 'Blocked')], default='pending', max_length=16, protected=True),
        ),
        migrations.AlterField(
            model_name='workflowrun',
            name='workflow_name',
            field=models.CharField(max_length=200),
        ),
        migrations.AddIndex(
            model_name='workflowrun',
            index=models.Index(fields=['status'], name='durable_run_status'),
        ),
        migrations.AddIndex(
            model_name='workflowrun',
            index=models.Index(condition=models.Q(('parent__isnull', False)), fields=['parent'], name='durable_run_parent'),
        ),
        migrations.RunPython(drop_primary_key_like_index, recreate_primary_key_like_index),
        migrations.RunPython(audit_append_only_again_on_sqlite, migrations.RunPython.noop),
    ]
