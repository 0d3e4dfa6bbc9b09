"""The live store's statements on a run's rows (durable/runtime/store/live.py): what the ORM would
have written, in fewer round trips."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable import services
from durable.models import AuditEvent, JournalEntry, Signal, WorkflowRun
from durable.runtime.store import live
from durable.testing import drive

pytestmark = pytest.mark.django_db


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite allows no writes in a WITH")
def test_a_signal_outside_a_transaction_is_one_statement_on_postgresql():
    run = services.run_start("collect_two", id="sql:one-statement", actor="test")

    with CaptureQueriesContext(connection) as statements:
        signal = services.signal_send(run.id, "item", {"n": 1}, actor="ana")

    assert len(statements) == 1
    assert AuditEvent.objects.get(run_id=run.id, action="signal").detail["signal_id"] == signal.pk


def columns(rows) -> list[list]:
    return [[getattr(row, field.attname) for field in row._meta.concrete_fields] for row in rows]


def test_the_journal_read_gives_the_entries_the_orm_gives(clock):
    run = services.run_start("step_wait_step", id="sql:journal", actor="test")
    drive(run.id)  # a step with its result, then a wait with no deadline

    read = live.journal_of(run.id)

    assert columns(sorted(read, key=lambda e: e.position)) == columns(
        JournalEntry.objects.filter(run_id=run.id)
    )
    assert [entry.kind for entry in sorted(read, key=lambda e: e.position)] == ["step", "signal"]


def test_the_pending_signals_read_gives_the_untaken_signals_oldest_first(clock):
    run = services.run_start("collect_two", id="sql:signals", actor="test")
    drive(run.id)
    services.signal_send(run.id, "item", {"n": 1}, actor="test")
    drive(run.id)  # the first wait takes it
    services.signal_send(
        run.id, "item", {"n": 2, "text": "ação", "nested": [{"a": None}]}, actor="test"
    )
    services.signal_send(run.id, "other", [1.5, True], actor="test")

    read = live.pending_signals_of(run.id)

    assert columns(read) == columns(
        Signal.objects.filter(run_id=run.id, consumed_position__isnull=True).order_by("id")
    )
    assert [signal.payload for signal in read] == [
        {"n": 2, "text": "ação", "nested": [{"a": None}]},
        [1.5, True],
    ]


def test_waking_runs_bumps_their_signal_seq_and_brings_wake_at_forward_never_back(clock):
    later = drive(
        services.run_start("nap", id="sql:wake-later", actor="test").id
    )  # wakes in an hour
    sooner = services.run_start(
        "nap", id="sql:wake-sooner", actor="test"
    )  # due in the grace period
    done = drive(services.run_start("three_steps", 1, id="sql:wake-done", actor="test").id)
    by = clock.now() + timedelta(minutes=5)

    woken = live.wake_runs([later.id, sooner.id, done.id], now=clock.now(), by=by)

    rows = dict(WorkflowRun.objects.values_list("id", "wake_at"))
    seqs = dict(WorkflowRun.objects.values_list("id", "signal_seq"))
    assert woken == 2
    assert (rows[later.id], rows[sooner.id]) == (by, sooner.wake_at)
    assert (seqs[later.id], seqs[sooner.id], seqs[done.id]) == (
        later.signal_seq + 1,
        sooner.signal_seq + 1,
        done.signal_seq,
    )


def test_waking_a_run_sets_the_other_columns_asked_for_in_the_same_statement(clock):
    run = drive(services.run_start("nap", id="sql:wake-also", actor="test").id)
    request = {"reason": "operator", "actor": "ops"}

    with CaptureQueriesContext(connection) as queries:
        live.wake_runs([run.id], now=clock.now(), by=clock.now(), cancel_request=request)

    assert len(queries) == 1
    assert WorkflowRun.objects.get(pk=run.id).cancel_request == request


def test_a_new_run_s_first_audit_row_starts_its_chain_without_reading_the_audit_table(clock):
    with CaptureQueriesContext(connection) as queries:
        run = services.run_start("three_steps", 1, id="sql:first-link", actor="test")

    audit_table = AuditEvent._meta.db_table
    assert [
        q["sql"]
        for q in queries
        if q["sql"].lstrip().startswith("SELECT") and audit_table in q["sql"]
    ] == []
    assert list(AuditEvent.objects.filter(run_id=run.id).values_list("action", "chain_seq")) == [
        ("start", 1)
    ]


def test_the_sweep_s_pick_gives_the_due_runs_soonest_first_whatever_their_ids(clock):
    for run_id, minutes_ago in (("sql:pick-a", 1), ("sql:pick-b", 3), ("sql:pick-c", 2)):
        services.run_start("three_steps", 1, id=run_id, actor="test")
        WorkflowRun.objects.filter(pk=run_id).update(
            wake_at=clock.now() - timedelta(minutes=minutes_ago)
        )

    picked = live.pick_due(clock.now(), clock.now() + timedelta(minutes=1), 10)

    assert [run_id for run_id, *_ in picked] == ["sql:pick-b", "sql:pick-c", "sql:pick-a"]


def test_an_untaken_signal_given_a_new_payload_is_audited_with_its_key_and_reported_replaced(clock):
    run = drive(services.run_start("collect_two", id="sql:replace", actor="test").id)
    services.signal_send(run.id, "other", {"n": 1}, dedupe_key="news-1", actor="test")

    replaced = services.signal_replace_untaken(run.id, "news-1", {"n": 2}, actor="ops")

    signal = Signal.objects.get(run_id=run.id, dedupe_key="news-1")
    assert replaced is True
    assert signal.payload == {"n": 2}
    assert AuditEvent.objects.filter(run_id=run.id, action="signal").order_by(
        "chain_seq"
    ).last().detail == {
        "name": "other",
        "signal_id": signal.pk,
        "dedupe_key": "news-1",
        "replaced": True,
    }


def test_a_signal_the_run_already_took_is_not_replaced(clock):
    run = drive(services.run_start("collect_two", id="sql:taken", actor="test").id)
    services.signal_send(run.id, "item", {"n": 1}, dedupe_key="item-1", actor="test")
    drive(run.id)  # the first wait takes it

    replaced = services.signal_replace_untaken(run.id, "item-1", {"n": 2}, actor="ops")

    assert replaced is False
    assert Signal.objects.get(run_id=run.id, dedupe_key="item-1").payload == {"n": 1}
