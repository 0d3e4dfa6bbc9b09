"""Chain durable.AuditEvent's rows by hash and make the table append-only (durable/chain.py)."""

import django.db.models.deletion
from django.db import migrations, models

from durable import chain

# The chained values are a stored format: frozen here, whatever the model says later.
FIELDS = ("action", "actor", "detail", "created_at")


class Migration(migrations.Migration):

    dependencies = [
        ('durable', '0003_run_cancel_request_drain'),
    ]

    operations = [
        migrations.AddField(
            model_name='auditevent',
            name='chain_seq',
            field=models.PositiveBigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='prev_hash',
            field=models.CharField(default='', editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='auditevent',
            name='row_hash',
            field=models.CharField(default='', editable=False, max_length=64),
        ),
        migrations.AlterField(
            model_name='auditevent',
            name='run',
            field=models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='audit_events', to='durable.workflowrun'),
        ),
        chain.backfill_operation("durable.AuditEvent", parent="run", fields=FIELDS),
        migrations.AddConstraint(
            model_name='auditevent',
            constraint=models.UniqueConstraint(fields=('run', 'chain_seq'), name='durable_audit_chain_seq'),
        ),
        chain.append_only_operation("durable_auditevent"),
    ]
