"""Chain approvals.ApprovalAudit's rows by hash and make the table append-only (durable/chain.py)."""

from django.db import migrations, models

from durable import chain

# The chained values are a stored format: frozen here, whatever the model says later.
FIELDS = ("actor", "action", "from_status", "to_status", "reason", "ip", "user_agent", "path",
          "detail", "created_at")


class Migration(migrations.Migration):

    dependencies = [
        ('approvals', '0002_compliance_group'),
    ]

    operations = [
        migrations.AddField(
            model_name='approvalaudit',
            name='chain_seq',
            field=models.PositiveBigIntegerField(default=0, editable=False),
        ),
        migrations.AddField(
            model_name='approvalaudit',
            name='prev_hash',
            field=models.CharField(default='', editable=False, max_length=64),
        ),
        migrations.AddField(
            model_name='approvalaudit',
            name='row_hash',
            field=models.CharField(default='', editable=False, max_length=64),
        ),
        chain.backfill_operation("approvals.ApprovalAudit", parent="request", fields=FIELDS),
        migrations.AddConstraint(
            model_name='approvalaudit',
            constraint=models.UniqueConstraint(fields=('request', 'chain_seq'), name='approvals_audit_chain_seq'),
        ),
        chain.append_only_operation("approvals_approvalaudit"),
    ]
