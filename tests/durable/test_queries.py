"""Queries: a run's state read by replaying its body from the journal, with nothing run and
nothing written; the handler answers as the body left things at the run's position."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable import days, services, workflow
from durable.errors import QueryFailed, QueryNotFound
from durable.features import history
from durable.models import JournalEntry, RunStatus
from durable.testing import drive, override_workflow
from tests.durable.test_api import client_for, user_with
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def remind(invoice: int) -> str:
    Effect.objects.create(run_id=str(invoice), name="remind", idempotency_key="")
    return "reminded"


@workflow(name="queried_invoice")
def queried_invoice(invoice: int) -> dict:
    state = {"stage": "issuing", "reminders": 0}
    workflow.on_query("state", lambda: dict(state))
    workflow.on_query("reminders_plus", lambda extra: state["reminders"] + extra)
    workflow.on_query("broken", lambda: state["missing"])
    workflow.on_query("steps_again", lambda: workflow.step(remind, invoice))
    state["stage"] = "awaiting payment"
    while workflow.wait_for_signal("paid", timeout=days(1)) is None:
        state["reminders"] += 1
        workflow.step(remind, invoice)
    state["stage"] = "paid"
    workflow.on_query("receipt", lambda: f"invoice {invoice} paid")
    return state


def queried_invoice_reordered(invoice: int) -> dict:
    workflow.step(remind, invoice)
    workflow.on_query("state", lambda: {})
    return {}


@pytest.fixture
def waiting_run(clock):
    run = drive(services.run_start(queried_invoice, 9, id="invoice:9", actor="test").id)
    assert run.status == RunStatus.WAITING
    return run


def test_a_query_answers_the_state_the_body_had_at_the_runs_position(waiting_run):
    assert services.run_query(waiting_run.id, "state") == {
        "stage": "awaiting payment",
        "reminders": 0,
    }


def test_a_query_follows_the_run_as_its_journal_grows(waiting_run, clock):
    clock.advance(timedelta(days=1, seconds=1))
    drive(waiting_run.id)

    assert services.run_query(waiting_run.id, "state") == {
        "stage": "awaiting payment",
        "reminders": 1,
    }


def test_a_query_takes_arguments(waiting_run):
    assert services.run_query(waiting_run.id, "reminders_plus", 5) == 5


def test_a_finished_run_answers_as_its_body_ended(waiting_run):
    services.signal_send(waiting_run.id, "paid", {"by": "pix"}, actor="test")
    drive(waiting_run.id)

    assert services.run_query(waiting_run.id, "state")["stage"] == "paid"
    assert services.run_query(waiting_run.id, "receipt") == "invoice 9 paid"


def test_a_query_reads_the_run_and_its_journal_and_writes_nothing(waiting_run, clock):
    clock.advance(timedelta(days=1, seconds=1))
    drive(waiting_run.id)
    journal_before = list(
        JournalEntry.objects.filter(run_id=waiting_run.id).values_list("position", "status")
    )

    with CaptureQueriesContext(connection) as statements:
        services.run_query(waiting_run.id, "state")

    assert [s["sql"].split()[0] for s in statements.captured_queries] == ["SELECT", "SELECT"]
    assert (
        list(JournalEntry.objects.filter(run_id=waiting_run.id).values_list("position", "status"))
        == journal_before
    )
    assert Effect.objects.filter(name="remind").count() == 1


def test_a_query_the_body_has_not_registered_by_the_runs_position_is_not_found(waiting_run):
    with pytest.raises(QueryNotFound, match="'receipt'.*registered: 'broken', 'reminders_plus'"):
        services.run_query(waiting_run.id, "receipt")


def test_a_handler_that_raises_is_a_failed_query_naming_the_error(waiting_run):
    with pytest.raises(QueryFailed, match="KeyError"):
        services.run_query(waiting_run.id, "broken")


def test_a_handler_cannot_run_a_step(waiting_run):
    with pytest.raises(QueryFailed, match="NotInWorkflow"):
        services.run_query(waiting_run.id, "steps_again")

    assert not Effect.objects.filter(name="remind").exists()


def test_a_run_whose_code_no_longer_replays_cannot_be_queried(waiting_run):
    with override_workflow(queried_invoice_reordered, name="queried_invoice"):
        with pytest.raises(QueryFailed, match="does not replay"):
            services.run_query(waiting_run.id, "state")


def test_registering_a_query_takes_no_journal_position_and_replays(waiting_run):
    recorded = history.history_parse(history.history_export(waiting_run.id), source="test")

    assert [entry.kind for _, entry in sorted(recorded.journal.items())] == ["signal"]
    assert history.history_replay(recorded).ok


def test_a_query_name_must_be_text_and_its_handler_callable(clock):
    @workflow(name="badly_queried")
    def badly_queried() -> None:
        workflow.on_query("", lambda: None)

    run = drive(services.run_start(badly_queried, id="bad:q", actor="test").id)

    assert run.status == RunStatus.FAILED
    assert "query name" in run.error["message"]


# --- GET /api/runs/<id>/queries/<name>/ ---


def test_the_api_answers_a_query_to_whoever_may_view_runs(waiting_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    response = viewer.get("/api/runs/invoice:9/queries/state/")

    assert response.status_code == 200
    assert response.json() == {
        "query": "state",
        "result": {"stage": "awaiting payment", "reminders": 0},
    }


def test_the_api_passes_each_arg_as_json_when_it_parses(waiting_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    response = viewer.get("/api/runs/invoice:9/queries/reminders_plus/", {"arg": "2"})

    assert response.json()["result"] == 2


def test_the_api_passes_an_arg_that_is_not_json_as_text(waiting_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    response = viewer.get("/api/runs/invoice:9/queries/reminders_plus/", {"arg": "two"})

    assert response.status_code == 422
    assert "TypeError" in response.json()["error"]["message"]


def test_the_api_refuses_an_unknown_parameter(waiting_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    response = viewer.get("/api/runs/invoice:9/queries/state/", {"args": "[2]"})

    assert response.status_code == 400


def test_the_api_answers_404_for_an_unregistered_query_and_422_for_a_failed_one(waiting_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    missing = viewer.get("/api/runs/invoice:9/queries/receipt/")
    failed = viewer.get("/api/runs/invoice:9/queries/broken/")

    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "query_not_found")
    assert (failed.status_code, failed.json()["error"]["code"]) == (422, "query_failed")


def test_the_api_needs_the_view_permission_for_a_query(waiting_run):
    nobody = client_for(user_with(username="nobody"))

    assert nobody.get("/api/runs/invoice:9/queries/state/").status_code == 403
