"""The audit trail against the database's own owner: the app runs as a role that can only
add and read audit rows, rows are sealed with a key the database never sees, and the chains'
heads exported outside it show rows cut from the end or a table emptied."""

import io
import uuid
from types import SimpleNamespace

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from durable import chain, services
from durable.models import AuditEvent, WorkflowRun

pytestmark = [
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="roles, table owners and session_replication_role are PostgreSQL's; SQLite has none",
    ),
    pytest.mark.django_db(
        transaction=True
    ),  # the app role's own connection sees committed rows only
]
AUDIT_TABLES = [
    "durable_auditevent",
    "durable_archivedauditevent",
    "durable_scheduleevent",
    "approvals_approvalaudit",
]
TRIGGER = chain.trigger_name("durable_auditevent")


def durable(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("durable", *argv, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def app_role():
    """A login role granted as docs/operations.md says (``durable roles --apply``, run by the
    owner): its ``name``, and ``connect()`` to the test database as it. Dropped afterwards."""
    name, opened = f"durable_app_{uuid.uuid4().hex[:12]}", []
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE ROLE "{name}" LOGIN')
    try:
        code, out = durable("roles", "--app-role", name, "--apply")
        assert code == 0, out

        def connect() -> psycopg.Connection:
            settings = connection.settings_dict
            opened.append(
                psycopg.connect(
                    host=settings["HOST"] or "127.0.0.1",
                    port=settings["PORT"] or 5432,
                    dbname=settings["NAME"],
                    user=name,
                    autocommit=True,
                )
            )
            return opened[-1]

        yield SimpleNamespace(name=name, connect=connect)
    finally:
        for app_connection in opened:
            app_connection.close()
        with connection.cursor() as cursor:
            cursor.execute(f'DROP OWNED BY "{name}"')
            cursor.execute(f'DROP ROLE "{name}"')


@pytest.fixture
def trail():
    """A run with three audit events: started, signalled, cancelled."""
    run = services.run_start("step_wait_step", id="tamper:c-1", actor="ana")
    services.signal_send(run.id, "note", {"text": "hello"}, actor="ana")
    services.run_cancel(run.id, reason="duplicate", actor="bruno")
    return list(AuditEvent.objects.filter(run_id=run.id).order_by("chain_seq"))


@pytest.fixture
def exported_heads(settings, tmp_path):
    """Where beat's export of the chains' heads goes (the default sink, a file)."""
    settings.DURABLE_AUDIT_HEADS_FILE = str(tmp_path / "heads.jsonl")
    return tmp_path / "heads.jsonl"


def rehash_from(seq: int, run_id: str) -> None:
    """What an owner without the key does after an edit: hash the chain again from ``seq``
    with plain SHA-256, as durable/chain.py does, so every link holds."""
    rows = list(AuditEvent.objects.filter(run_id=run_id).order_by("chain_seq"))
    prev = rows[seq - 2].row_hash if seq > 1 else chain.GENESIS
    with connection.cursor() as cursor:
        for row in rows[seq - 1 :]:
            row.prev_hash, row.row_hash = (
                prev,
                chain.row_digest(row, prev, parent="run", fields=AuditEvent.chained_fields),
            )
            cursor.execute(
                "UPDATE durable_auditevent SET prev_hash = %s, row_hash = %s WHERE id = %s",
                [row.prev_hash, row.row_hash, row.pk],
            )
            prev = row.row_hash


def as_owner_with_the_trigger_disabled(statement: str, params: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE durable_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(statement, params)
        cursor.execute(f"ALTER TABLE durable_auditevent ENABLE TRIGGER {TRIGGER}")


# --- (a) disabling the trigger ---


def test_the_app_role_cannot_disable_the_audit_trigger(app_role, trail):
    app = app_role.connect()

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="must be owner"):
        app.execute(f"ALTER TABLE durable_auditevent DISABLE TRIGGER {TRIGGER}")

    assert chain.trigger_state(AuditEvent) == "enabled"


def test_a_row_edited_and_hashed_again_by_the_owner_is_found_by_verify(trail):
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE durable_auditevent DISABLE TRIGGER {TRIGGER}")
        cursor.execute(
            "UPDATE durable_auditevent SET actor = 'someone-else' WHERE id = %s", [trail[1].pk]
        )
        rehash_from(2, "tamper:c-1")
        cursor.execute(f"ALTER TABLE durable_auditevent ENABLE TRIGGER {TRIGGER}")

    code, out = durable("audit", "verify")

    assert code == 1
    assert (
        "chain 'tamper:c-1' breaks at seq 2 (row id "
        f"{trail[1].pk}): its seal does not match its hash" in out
    )


# --- (b) session_replication_role = replica ---


def test_the_app_role_cannot_switch_triggers_off_for_its_session(app_role, trail):
    app = app_role.connect()

    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="session_replication_role"):
        app.execute("SET session_replication_role = replica")


def test_a_row_edited_in_replica_mode_is_found_by_verify_though_the_trigger_is_on(trail):
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(
                "UPDATE durable_auditevent SET detail = '{}' WHERE id = %s", [trail[1].pk]
            )
            rehash_from(2, "tamper:c-1")
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")

    code, out = durable("audit", "verify")

    assert code == 1
    assert "append-only trigger enabled" in out
    assert "chain 'tamper:c-1' breaks at seq 2" in out and "seal does not match" in out


# --- (c) a row cut from the end of a chain ---


def test_a_tail_row_deleted_after_the_heads_were_exported_is_found_against_them(
    trail, exported_heads
):
    durable("audit", "export-heads")
    as_owner_with_the_trigger_disabled(
        "DELETE FROM durable_auditevent WHERE id = %s", [trail[-1].pk]
    )

    code, out = durable("audit", "verify", "--against", str(exported_heads))

    assert code == 1
    assert "chain 'tamper:c-1' breaks at seq 3" in out and "rows cut from its end" in out


# --- (d) TRUNCATE ---


def test_the_app_role_cannot_empty_an_audit_table(app_role, trail):
    app = app_role.connect()

    refused = []
    for table in AUDIT_TABLES:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute(f"TRUNCATE {table} CASCADE")
        refused.append(table)

    assert refused == AUDIT_TABLES
    assert AuditEvent.objects.filter(run_id="tamper:c-1").count() == 3


def test_an_audit_table_emptied_after_the_heads_were_exported_is_found_against_them(
    trail, exported_heads
):
    durable("audit", "export-heads")
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE durable_auditevent")

    code, out = durable("audit", "verify", "--against", str(exported_heads))

    assert code == 1
    assert "durable_auditevent: chain 'tamper:c-1' breaks at seq 3" in out and "is gone" in out


# --- what the app role still does ---


def test_the_app_role_cannot_change_or_delete_an_audit_row(app_role, trail):
    app = app_role.connect()

    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("UPDATE approvals_approvalaudit SET reason = 'edited'")
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        app.execute("DELETE FROM durable_scheduleevent")
    with pytest.raises(psycopg.errors.RestrictViolation, match="append-only"):
        app.execute(
            "DELETE FROM durable_auditevent WHERE id = %s", [trail[0].pk]
        )  # granted for archiving only

    assert AuditEvent.objects.filter(run_id="tamper:c-1").count() == 3


def test_the_app_runs_as_its_role_and_its_trails_verify(app_role, exported_heads):
    owner = connection.settings_dict["USER"]
    connection.close()
    connection.settings_dict["USER"] = app_role.name
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user")
            ran_as = cursor.fetchone()[0]
        run = services.run_start("step_wait_step", id="tamper:as-app", actor="ana")
        services.signal_send(run.id, "note", {"text": "olá"}, actor="ana")
        durable("audit", "export-heads")
        code, out = durable("audit", "verify", "--against", str(exported_heads))
    finally:
        connection.close()
        connection.settings_dict["USER"] = owner

    assert ran_as == app_role.name
    assert code == 0, out
    assert WorkflowRun.objects.get(pk="tamper:as-app").signal_seq == 1
