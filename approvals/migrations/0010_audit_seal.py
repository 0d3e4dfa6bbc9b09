"""A case's audit rows carry a seal too (durable/migrations/0019_audit_seal.py says why);
the rows already written are sealed with the key this migration runs with."""
from django.db import migrations, models

from durable import chain

# Frozen: the SQLite append-only trigger as 0003 installs it.
SQLITE_APPEND_ONLY = ("DROP TRIGGER IF EXISTS approvals_approvalaudit_append_only",
                      'CREATE TRIGGER approvals_approvalaudit_append_only BEFORE UPDATE ON "approvals_approvalaudit" '
                      "BEGIN SELECT RAISE(ABORT, 'audit rows are append-only: UPDATE refused'); END")


def append_only_again_on_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for statement in SQLITE_APPEND_ONLY:
            schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("approvals", "0009_field_labels"),
        ("durable", "0019_audit_seal"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, append_only_again_on_sqlite),
        migrations.AddField(model_name="approvalaudit", name="row_mac",
                            field=models.CharField(default="", editable=False, max_length=64)),
        chain.seal_operation("approvals.ApprovalAudit"),
    ]
