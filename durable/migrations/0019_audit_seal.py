"""Every audit row carries a seal: an HMAC of its hash with DURABLE_AUDIT_KEY (durable/chain.py).

The rows already written are sealed here, with the key this migration runs with, so run it
with the key the app will run with. Their hashes are left as they are: the chains still
verify as plain SHA-256 links, and from now on every row's seal must match too.
On SQLite adding a column rebuilds the table without its trigger: sealing installs it
again; the operation first in the list does it again after the column is removed.
"""
from django.db import migrations, models

from durable import chain

SEALED = ("durable.AuditEvent", "durable.ArchivedAuditEvent", "durable.ScheduleEvent")
# Frozen: the SQLite append-only trigger as 0004 and 0010 install it.
SQLITE_APPEND_ONLY = ("DROP TRIGGER IF EXISTS {name}",
                      'CREATE TRIGGER {name} BEFORE UPDATE ON "{table}" '
                      "BEGIN SELECT RAISE(ABORT, 'audit rows are append-only: UPDATE refused'); END")


def append_only_again_on_sqlite(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        for label in SEALED:
            table = apps.get_model(label)._meta.db_table
            for statement in SQLITE_APPEND_ONLY:
                schema_editor.execute(statement.format(name=f"{table}_append_only", table=table), params=None)


class Migration(migrations.Migration):

    dependencies = [
        ("durable", "0018_api_tokens"),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, append_only_again_on_sqlite),
        *(migrations.AddField(model_name=label.split(".")[1].lower(), name="row_mac",
                              field=models.CharField(default="", editable=False, max_length=64))
          for label in SEALED),
        chain.seal_operation(*SEALED),
    ]
