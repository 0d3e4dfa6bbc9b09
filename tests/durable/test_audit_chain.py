"""Tamper-evident audit trails: append-only in the database, hash-chained per run and per case,
and ``durable audit verify`` names the first broken link."""

import io
import threading

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import ProtectedError
from django.urls import reverse

from approvals.models import ApprovalAudit
from durable import chain, services
from durable.models import AuditEvent, WorkflowRun
from tests.approvals.conftest import start_case

pytestmark = pytest.mark.django_db
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the DELETE trigger is PostgreSQL's"
)


def verify() -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("durable", "audit", "verify", stdout=out)
    except SystemExit as exit:
        return exit.code, out.getvalue()
    return 0, out.getvalue()


@pytest.fixture
def trail():
    """A run with three audit events: started, signalled, cancelled."""
    run = services.run_start("step_wait_step", id="audit:c-1", actor="ana")
    services.signal_send(run.id, "note", {"text": "hello"}, actor="ana")
    services.run_cancel(run.id, reason="duplicate", actor="bruno")
    return list(AuditEvent.objects.filter(run_id=run.id).order_by("chain_seq"))


def tampered(table: str, statement: str, params: list) -> None:
    """Run a statement with the append-only trigger out of the way, as a database owner could."""
    trigger = chain.trigger_name(table)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SET CONSTRAINTS ALL IMMEDIATE"
            )  # no deferred checks pending before ALTER TABLE
            cursor.execute(f'ALTER TABLE "{table}" DISABLE TRIGGER {trigger}')
            cursor.execute(statement, params)
            cursor.execute(f'ALTER TABLE "{table}" ENABLE TRIGGER {trigger}')
        else:
            cursor.execute(f"DROP TRIGGER {trigger}")
            cursor.execute(statement, params)
            for sql in chain.trigger_sql("sqlite", table):
                cursor.execute(sql)


def test_each_audit_event_is_linked_to_the_one_before_it_in_its_run(trail):
    seqs = [event.chain_seq for event in trail]
    links = [(event.prev_hash, before.row_hash) for before, event in zip(trail, trail[1:])]

    assert seqs == [1, 2, 3]
    assert trail[0].prev_hash == chain.GENESIS
    assert all(prev == before for prev, before in links)
    assert len({event.row_hash for event in trail}) == 3


def test_verify_passes_on_untouched_trails_and_reports_the_guards(trail):
    start_case("acme")

    code, out = verify()

    assert code == 0, out
    assert "durable_auditevent: 4 row(s) in 2 chain(s); append-only trigger enabled" in out
    assert "approvals_approvalaudit:" in out and "BROKEN" not in out


def test_an_update_through_raw_sql_is_refused_by_the_database(trail):
    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE durable_auditevent SET actor = %s WHERE id = %s", ["mallory", trail[0].pk]
            )

    assert AuditEvent.objects.get(pk=trail[0].pk).actor == "ana"


@on_postgresql
def test_a_delete_through_raw_sql_is_refused_on_postgresql(trail):
    with pytest.raises(IntegrityError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM durable_auditevent WHERE id = %s", [trail[1].pk])

    assert AuditEvent.objects.filter(pk=trail[1].pk).exists()


def test_an_approval_audit_update_through_raw_sql_is_refused_by_the_database():
    row = start_case("acme").audit.first()

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE approvals_approvalaudit SET reason = 'edited' WHERE id = %s", [row.pk]
            )

    assert ApprovalAudit.objects.get(pk=row.pk).reason == row.reason


def test_queryset_update_and_delete_are_refused_by_the_orm(trail):
    with pytest.raises(chain.AppendOnly):
        AuditEvent.objects.filter(run_id="audit:c-1").update(actor="mallory")
    with pytest.raises(chain.AppendOnly):
        AuditEvent.objects.filter(run_id="audit:c-1").delete()
    with pytest.raises(chain.AppendOnly):
        trail[0].save()

    assert AuditEvent.objects.filter(run_id="audit:c-1", actor="ana").count() == 2


def test_a_row_altered_with_the_trigger_disabled_is_found_by_verify(trail):
    tampered(
        "durable_auditevent",
        "UPDATE durable_auditevent SET actor = %s WHERE id = %s",
        ["someone-else", trail[1].pk],
    )

    code, out = verify()

    assert code == 1
    assert f"chain 'audit:c-1' breaks at seq 2 (row id {trail[1].pk})" in out
    assert "content does not match its hash" in out


def test_a_row_altered_and_hashed_again_without_the_key_is_found_by_verify(trail):
    last = trail[-1]
    last.actor = "someone-else"
    rehashed = chain.row_digest(
        last, last.prev_hash, parent="run", fields=AuditEvent.chained_fields
    )
    tampered(
        "durable_auditevent",
        "UPDATE durable_auditevent SET actor = %s, row_hash = %s WHERE id = %s",
        ["someone-else", rehashed, last.pk],
    )

    code, out = verify()

    assert code == 1
    assert (
        f"chain 'audit:c-1' breaks at seq 3 (row id {last.pk}): its seal does not match its hash"
        in out
    )


def test_every_audit_row_is_sealed_with_the_key(trail):
    start_case("acme")

    rows = [*AuditEvent.objects.all(), *ApprovalAudit.objects.all()]

    assert rows and all(row.row_mac == chain.seal(row.row_hash) for row in rows)


def test_untouched_trails_verify_against_the_heads_exported_earlier(trail, settings, tmp_path):
    settings.DURABLE_AUDIT_HEADS_FILE = str(tmp_path / "heads.jsonl")
    waiting = services.run_start("step_wait_step", id="audit:c-2", actor="ana")
    call_command("durable", "audit", "export-heads", stdout=io.StringIO())
    services.signal_send(
        waiting.id, "late", {}, actor="ana"
    )  # a chain goes on past its exported head
    start_case("acme")  # and a new one starts
    call_command("durable", "audit", "export-heads", stdout=io.StringIO())

    out = io.StringIO()
    call_command(
        "durable", "audit", "verify", "--against", str(tmp_path / "heads.jsonl"), stdout=out
    )

    assert (
        "against the heads of" in out.getvalue() and "BROKEN" not in out.getvalue()
    )  # and it exited 0


def test_a_row_deleted_from_the_middle_of_a_trail_is_found_by_verify(trail):
    tampered("durable_auditevent", "DELETE FROM durable_auditevent WHERE id = %s", [trail[1].pk])

    code, out = verify()

    assert code == 1
    assert "breaks at seq 2" in out and "found 3" in out


def test_an_altered_approval_audit_row_is_found_by_verify():
    case = start_case("acme")
    row = case.audit.first()
    tampered(
        "approvals_approvalaudit",
        "UPDATE approvals_approvalaudit SET ip = %s WHERE id = %s",
        ["203.0.113.66", row.pk],
    )

    code, out = verify()

    assert code == 1
    assert f"approvals_approvalaudit: chain '{case.pk}' breaks at seq 1" in out


def test_a_missing_trigger_makes_verify_fail(trail):
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(
                'ALTER TABLE "durable_auditevent" DISABLE TRIGGER durable_auditevent_append_only'
            )
        else:
            cursor.execute("DROP TRIGGER durable_auditevent_append_only")

    code, out = verify()

    assert code == 1
    assert "UNGUARDED durable_auditevent" in out


def test_a_run_with_an_audit_trail_cannot_be_deleted(trail):
    with pytest.raises(ProtectedError):
        WorkflowRun.objects.filter(pk="audit:c-1").delete()

    assert AuditEvent.objects.filter(run_id="audit:c-1").count() == 3


@pytest.mark.django_db(transaction=True)
def test_the_test_suites_flush_still_empties_the_audit_tables():
    services.run_start("step_wait_step", id="audit:flushed", actor="test")
    start_case("flushed")

    call_command("flush", "--noinput")

    assert not AuditEvent.objects.exists() and not ApprovalAudit.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_writers_racing_on_one_run_keep_its_chain_whole():
    run = services.run_start("step_wait_step", id="audit:race", actor="test")
    barrier, errors = threading.Barrier(4), []

    def writer(n: int):
        try:
            barrier.wait()
            for i in range(10):
                services.signal_send(run.id, "note", {"writer": n, "i": i}, actor=f"writer-{n}")
        except Exception as error:  # reported below, with the others' outcome
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    code, out = verify()
    assert errors == []
    assert list(
        AuditEvent.objects.filter(run_id=run.id)
        .values_list("chain_seq", flat=True)
        .order_by("chain_seq")
    ) == list(range(1, 42))
    assert code == 0, out


@pytest.mark.django_db(transaction=True)
def test_a_signal_sent_outside_a_transaction_is_linked_and_hashed_as_verify_expects():
    run = services.run_start("step_wait_step", id="audit:autocommit", actor="test")

    signal = services.signal_send(
        run.id,
        "note",
        {"text": "ação ✓", "n": 1.0},
        actor="ana",
        audit={"via": "api", "zeta": [1, {"b": 2, "a": 1}]},
    )

    event = AuditEvent.objects.get(run_id=run.id, action="signal")
    before = AuditEvent.objects.get(run_id=run.id, chain_seq=1)
    assert event.detail["signal_id"] == signal.pk
    assert (event.chain_seq, event.prev_hash) == (2, before.row_hash)
    assert event.row_hash == chain.row_digest(
        event, event.prev_hash, parent="run", fields=AuditEvent.chained_fields
    )
    assert verify()[0] == 0


@pytest.mark.django_db(transaction=True)
def test_a_signal_that_waited_for_another_writers_lock_still_extends_the_chain():
    run = services.run_start("step_wait_step", id="audit:waited", actor="test")
    holding, errors = threading.Event(), []

    def holder():
        try:
            with transaction.atomic():
                services.signal_send(
                    run.id, "note", {"by": "holder"}, actor="holder"
                )  # locks the run
                holding.set()
                threading.Event().wait(
                    0.5
                )  # the other sender's statement starts, and waits for the row
        except Exception as error:  # reported below
            errors.append(error)
        finally:
            holding.set()
            connection.close()

    thread = threading.Thread(target=holder)
    thread.start()
    holding.wait(timeout=10)
    services.signal_send(
        run.id, "note", {"by": "main"}, actor="main"
    )  # its snapshot misses the holder's row
    thread.join(timeout=30)

    assert errors == []
    assert list(
        AuditEvent.objects.filter(run_id=run.id)
        .order_by("chain_seq")
        .values_list("chain_seq", "actor")
    ) == [(1, "test"), (2, "holder"), (3, "main")]
    assert verify()[0] == 0


def test_the_body_cut_at_its_holes_is_the_body_once_the_database_fills_them():
    run = services.run_start("step_wait_step", id="audit:holes", actor="test")
    event = AuditEvent(
        run_id=run.id,
        action="signal",
        actor="ana",
        created_at=run.created_at,
        detail={"name": "go", "a": "durable-hole-x", "signal_id": "hole-2"},
    )
    event.chain_seq = "hole-1"

    pieces = chain.body_around(
        event, ["hole-1", "hole-2"], parent="run", fields=AuditEvent.chained_fields
    )

    event.chain_seq, event.detail["signal_id"] = 7, 42
    assert "7".join([pieces[0], "42".join(pieces[1:])]) == chain.row_body(
        event, parent="run", fields=AuditEvent.chained_fields
    )


def test_values_the_database_stores_in_its_own_form_still_verify():
    run = services.run_start("step_wait_step", id="audit:forms", actor="test")
    AuditEvent.objects.create(
        run_id=run.id,
        action="note",
        actor="ops",
        created_at=run.created_at,
        detail={
            "whole": 1.0,
            "big": 1e20,
            "small": 1.5e-7,
            "text": "ação ✓",
            "nested": [{"b": 2, "a": (1, 2)}],
        },
    )
    start_case("ipv6")
    ApprovalAudit.objects.create(
        request=start_case("ipv6-2"),
        actor="ana",
        action="note",
        ip="2001:0db8:0000:0000:0000:0000:0000:0001",
        created_at=run.created_at,
    )

    code, out = verify()

    assert code == 0, out


def test_the_admin_offers_no_way_to_delete_a_run_or_its_audit_events(client, trail):
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))

    run_delete = client.post(
        reverse("admin:durable_workflowrun_delete", args=[quote("audit:c-1")]), {"post": "yes"}
    )
    event_delete = client.post(
        reverse("admin:durable_auditevent_delete", args=[trail[0].pk]), {"post": "yes"}
    )

    assert (run_delete.status_code, event_delete.status_code) == (403, 403)
    assert AuditEvent.objects.filter(run_id="audit:c-1").count() == 3
