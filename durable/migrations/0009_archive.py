"""Archive tables for durable archive, and the audit trigger that lets a row leave only for its copy.

On PostgreSQL the hot audit table's trigger still refuses every UPDATE, and a DELETE unless
the archive already holds the same row (id, run, seq and hashes): an audit row can move
to the archive, never vanish. The archive's audit table gets the plain append-only trigger.
The SQL is frozen here, whatever durable/chain.py says later.
"""

import django.db.models.deletion
from django.db import migrations, models

from durable import chain

LEAVES_FOR_ARCHIVE = [
    """CREATE OR REPLACE FUNCTION durable_audit_leaves_for_archive() RETURNS trigger
       LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'DELETE' AND EXISTS (
             SELECT 1 FROM durable_archivedauditevent copy
              WHERE copy.id = OLD.id AND copy.run_id = OLD.run_id AND copy.chain_seq = OLD.chain_seq
                AND copy.prev_hash = OLD.prev_hash AND copy.row_hash = OLD.row_hash) THEN
           RETURN OLD;
         END IF;
         RAISE EXCEPTION 'audit rows are append-only: % on % refused', TG_OP, TG_TABLE_NAME
           USING ERRCODE = 'restrict_violation';
       END $$""",
    'DROP TRIGGER IF EXISTS durable_auditevent_append_only ON "durable_auditevent"',
    'CREATE TRIGGER durable_auditevent_append_only BEFORE UPDATE OR DELETE ON "durable_auditevent" '
    "FOR EACH ROW EXECUTE FUNCTION durable_audit_leaves_for_archive()",
]
APPEND_ONLY_AGAIN = [
    'DROP TRIGGER IF EXISTS durable_auditevent_append_only ON "durable_auditevent"',
    'CREATE TRIGGER durable_auditevent_append_only BEFORE UPDATE OR DELETE ON "durable_auditevent" '
    "FOR EACH ROW EXECUTE FUNCTION durable_refuse_audit_change()",
    "DROP FUNCTION IF EXISTS durable_audit_leaves_for_archive()",
]


def _on_postgresql(statements):
    def run(migration_apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0008_run_parent'),
    ]

    operations = [
        migrations.CreateModel(
            name='ArchiveBatch',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('token', models.CharField(max_length=32, unique=True)),
                ('actor', models.CharField(max_length=255)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('finished_before', models.DateTimeField()),
                ('runs', models.PositiveIntegerField()),
                ('export_file', models.CharField(blank=True, default='', max_length=1000)),
                ('export_sha256', models.CharField(blank=True, default='', max_length=64)),
                ('export_bytes', models.PositiveBigIntegerField(default=0)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'verbose_name_plural': 'archive batches',
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.CreateModel(
            name='ArchivedAuditEvent',
            fields=[
                ('chain_seq', models.PositiveBigIntegerField(default=0, editable=False)),
                ('prev_hash', models.CharField(default='', editable=False, max_length=64)),
                ('row_hash', models.CharField(default='', editable=False, max_length=64)),
                ('id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('action', models.CharField(max_length=32)),
                ('actor', models.CharField(max_length=255)),
                ('detail', models.JSONField(blank=True, default=dict)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['created_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='ArchivedJournalEntry',
            fields=[
                ('id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('position', models.PositiveIntegerField()),
                ('kind', models.CharField(max_length=16)),
                ('name', models.CharField(max_length=255)),
                ('status', models.CharField(max_length=16)),
                ('result', models.JSONField(blank=True, null=True)),
                ('error', models.JSONField(blank=True, null=True)),
                ('idempotency_key', models.CharField(blank=True, default='', max_length=255)),
                ('attempt', models.PositiveIntegerField(default=0)),
                ('wake_at', models.DateTimeField(blank=True, null=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
            ],
            options={
                'verbose_name_plural': 'archived journal entries',
                'ordering': ['run', 'position'],
            },
        ),
        migrations.CreateModel(
            name='ArchivedRun',
            fields=[
                ('id', models.CharField(max_length=255, primary_key=True, serialize=False)),
                ('workflow_name', models.CharField(db_index=True, max_length=200)),
                ('workflow_version', models.PositiveIntegerField()),
                ('status', models.CharField(max_length=16)),
                ('input', models.JSONField(blank=True, null=True)),
                ('result', models.JSONField(blank=True, null=True)),
                ('error', models.JSONField(blank=True, null=True)),
                ('attributes', models.JSONField(blank=True, default=dict)),
                ('advances', models.PositiveIntegerField(default=0)),
                ('parent_id', models.CharField(blank=True, max_length=255, null=True)),
                ('created_at', models.DateTimeField()),
                ('updated_at', models.DateTimeField()),
                ('finished_at', models.DateTimeField(db_index=True)),
                ('archived_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['-finished_at', 'id'],
            },
        ),
        migrations.CreateModel(
            name='ArchivedSignal',
            fields=[
                ('id', models.BigIntegerField(primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=255)),
                ('payload', models.JSONField(blank=True, null=True)),
                ('dedupe_key', models.CharField(blank=True, max_length=255, null=True)),
                ('consumed_position', models.PositiveIntegerField(blank=True, null=True)),
                ('consumed_at', models.DateTimeField(blank=True, null=True)),
                ('created_at', models.DateTimeField()),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddIndex(
            model_name='workflowrun',
            index=models.Index(condition=models.Q(('finished_at__isnull', False)), fields=['finished_at'], name='durable_run_finished'),
        ),
        migrations.AddField(
            model_name='archivedrun',
            name='batch',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='archived_runs', to='durable.archivebatch'),
        ),
        migrations.AddField(
            model_name='archivedjournalentry',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='journal', to='durable.archivedrun'),
        ),
        migrations.AddField(
            model_name='archivedauditevent',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='audit_events', to='durable.archivedrun'),
        ),
        migrations.AddField(
            model_name='archivedsignal',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='signals', to='durable.archivedrun'),
        ),
        migrations.AddConstraint(
            model_name='archivedjournalentry',
            constraint=models.UniqueConstraint(fields=('run', 'position'), name='durable_archived_journal_pos'),
        ),
        migrations.AddConstraint(
            model_name='archivedauditevent',
            constraint=models.UniqueConstraint(fields=('run', 'chain_seq'), name='durable_archived_audit_seq'),
        ),
        chain.append_only_operation("durable_archivedauditevent"),
        migrations.RunPython(_on_postgresql(LEAVES_FOR_ARCHIVE), _on_postgresql(APPEND_ONLY_AGAIN)),
    ]
