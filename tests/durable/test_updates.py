"""Updates: a validated request into a running workflow, refused at once with a reason or
applied by its handler inside the workflow (journaled once), its result returned to the caller."""

import json
from datetime import timedelta

import pytest

from durable import UpdateRejected, days, services, workflow
from durable.errors import SignalConflict, UpdateFailed, UpdateNotFound, UpdateTimeout
from durable.features import history
from durable.models import EntryKind, JournalEntry, RunStatus, Signal
from durable.testing import drive
from tests.durable.test_api import client_for, user_with
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def record_due_date(invoice: int, due: str) -> str:
    Effect.objects.create(run_id=str(invoice), name=f"due:{due}", idempotency_key="")
    return due


@workflow(name="updatable_invoice")
def updatable_invoice(invoice: int) -> dict:
    state = {"due": "2027-01-10", "changes": 0, "paid": False}

    def check(payload):
        if state["paid"]:
            raise UpdateRejected("the invoice is paid")
        if not isinstance(payload, dict) or not payload.get("due"):
            raise UpdateRejected('a new due date is needed: {"due": "YYYY-MM-DD"}')

    def change_due(payload):
        state["due"] = workflow.step(record_due_date, invoice, payload["due"])
        state["changes"] += 1
        return {"due": state["due"], "changes": state["changes"]}

    workflow.on_update("change_due_date", change_due, validator=check)
    workflow.on_update("explode", lambda payload: 1 / 0)
    workflow.on_query("state", lambda: dict(state))
    paid = workflow.wait_for_signal("paid", timeout=days(30))
    state["paid"] = paid is not None
    workflow.wait_for_signal("archived", timeout=days(1))
    return state


@pytest.fixture
def waiting_invoice(clock):
    run = drive(services.run_start(updatable_invoice, 3, id="inv:3", actor="test").id)
    assert run.status == RunStatus.WAITING
    return run


def update(run_id: str, name: str, payload, **options) -> str:
    """Store the update (no worker here to wait for) and return its id."""
    with pytest.raises(UpdateTimeout) as stored:
        services.run_update(run_id, name, payload, actor="ops", timeout=0, **options)
    return stored.value.update_id


def test_an_update_sent_while_the_run_waits_is_applied_by_its_handler_and_journaled(
    waiting_invoice,
):
    update_id = update(waiting_invoice.id, "change_due_date", {"due": "2027-02-01"})

    run = drive(waiting_invoice.id)

    assert run.status == RunStatus.WAITING
    assert services.update_wait(run, update_id, timeout=0) == {"due": "2027-02-01", "changes": 1}
    assert services.run_query(run.id, "state")["due"] == "2027-02-01"
    entry = JournalEntry.objects.get(run_id=run.id, kind=EntryKind.UPDATE)
    assert (entry.name, entry.status, entry.result["during"]) == ("change_due_date", "completed", 0)


def test_a_validator_refuses_at_once_with_its_reason_and_nothing_is_stored(waiting_invoice):
    with pytest.raises(UpdateRejected, match="a new due date is needed"):
        services.run_update(
            waiting_invoice.id, "change_due_date", {"due": ""}, actor="ops", timeout=0
        )

    assert not Signal.objects.filter(run_id=waiting_invoice.id).exists()


def test_the_validator_sees_the_runs_state_as_the_journal_has_it(waiting_invoice):
    services.signal_send(waiting_invoice.id, "paid", {"by": "pix"}, actor="provider")
    drive(waiting_invoice.id)

    with pytest.raises(UpdateRejected, match="the invoice is paid"):
        services.run_update(
            waiting_invoice.id, "change_due_date", {"due": "2027-03-01"}, actor="ops", timeout=0
        )


def test_an_update_the_body_does_not_take_is_not_found(waiting_invoice):
    with pytest.raises(UpdateNotFound, match="takes no update 'void'.*change_due_date"):
        services.run_update(waiting_invoice.id, "void", {}, actor="ops", timeout=0)


def test_the_same_dedupe_key_is_the_same_update_applied_once(waiting_invoice):
    first = update(
        waiting_invoice.id, "change_due_date", {"due": "2027-02-01"}, dedupe_key="ticket-9"
    )
    drive(waiting_invoice.id)

    again = services.run_update(
        waiting_invoice.id,
        "change_due_date",
        {"due": "2027-02-01"},
        actor="ops",
        timeout=0,
        dedupe_key="ticket-9",
    )  # the caller retries: the result at once
    drive(waiting_invoice.id)

    assert first == "ticket-9" and again == {"due": "2027-02-01", "changes": 1}
    assert JournalEntry.objects.filter(kind=EntryKind.UPDATE).count() == 1
    assert Effect.objects.filter(name="due:2027-02-01").count() == 1


def test_a_handler_that_raises_fails_the_update_not_the_workflow(waiting_invoice):
    update_id = update(waiting_invoice.id, "explode", {})

    run = drive(waiting_invoice.id)

    assert run.status == RunStatus.WAITING
    with pytest.raises(UpdateFailed, match="ZeroDivisionError") as failed:
        services.update_wait(run, update_id, timeout=0)
    assert (failed.value.error_type, failed.value.reason) == (
        "ZeroDivisionError",
        "division by zero",
    )


def hand_over(run_id: str) -> str:
    services.signal_send(run_id, "released", {"by": "update"}, dedupe_key="release", actor="update")
    return "handed"


@workflow(name="released_by_update")
def released_by_update() -> str:
    workflow.on_update(
        "release", lambda payload: workflow.step(hand_over, workflow.id, atomic=True)
    )
    got = workflow.wait_for_signal("released", timeout=days(30))
    return f"released by {got['by']}"


def test_a_handler_that_hands_the_wait_its_signal_ends_the_wait_in_the_same_advance(clock):
    run = drive(services.run_start(released_by_update, id="rel:1", actor="test").id)
    update_id = update(run.id, "release", None)

    run = drive(run.id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "released by update")
    assert services.update_wait(run, update_id, timeout=0) == "handed"
    report = history.history_replay(
        history.history_parse(history.history_export(run.id), source="test")
    )
    assert report.ok, report.summary


def test_a_run_with_updates_replays_from_its_recorded_history(waiting_invoice, clock):
    update(waiting_invoice.id, "change_due_date", {"due": "2027-02-01"})
    drive(waiting_invoice.id)
    services.signal_send(waiting_invoice.id, "paid", {"by": "pix"}, actor="provider")
    drive(waiting_invoice.id)
    clock.advance(timedelta(days=2))
    run = drive(waiting_invoice.id)

    report = history.history_replay(
        history.history_parse(history.history_export(run.id), source="test")
    )

    assert run.status == RunStatus.COMPLETED and run.result["due"] == "2027-02-01"
    assert report.ok, report.summary


def test_a_handler_killed_half_way_runs_again_from_its_journal_without_repeating_its_step(
    waiting_invoice, clock
):
    """The update's entry is journaled before its handler runs: a worker that died after the
    handler's step, before the outcome, leaves a started entry the next holder completes."""
    update_id = update(waiting_invoice.id, "change_due_date", {"due": "2027-02-01"})
    drive(waiting_invoice.id)
    entry = JournalEntry.objects.get(run_id=waiting_invoice.id, kind=EntryKind.UPDATE)
    JournalEntry.objects.filter(pk=entry.pk).update(
        status="started"
    )  # as a worker killed before its last write

    run = drive(waiting_invoice.id)

    assert services.update_wait(run, update_id, timeout=0) == {"due": "2027-02-01", "changes": 1}
    assert Effect.objects.filter(name="due:2027-02-01").count() == 1


@pytest.mark.parametrize(
    "name",
    [
        "durable.update:change_due_date",
        "Durable.Update:change_due_date",
        "DURABLE.UPDATE:change_due_date",
    ],
)
def test_a_signal_cannot_pass_for_an_update_in_any_case(waiting_invoice, name):
    with pytest.raises(SignalConflict, match="are updates"):
        services.signal_send(waiting_invoice.id, name, {"due": "x"}, actor="ops")

    assert not Signal.objects.filter(run_id=waiting_invoice.id, name=name).exists()


def test_an_update_inside_a_transaction_is_stored_with_it_and_not_waited_for(waiting_invoice):
    with pytest.raises(UpdateTimeout, match="is stored"):
        services.run_update(
            waiting_invoice.id, "change_due_date", {"due": "2027-02-01"}, actor="ops", timeout=5
        )

    assert Signal.objects.filter(
        run_id=waiting_invoice.id, name="durable.update:change_due_date"
    ).exists()


# --- POST /api/runs/<id>/updates/<name>/ ---
# (waiting needs a worker: tests/durable/test_updates_on_workers.py)


def post_update(client, name: str, body: dict, **headers):
    return client.post(
        f"/api/runs/inv:3/updates/{name}/",
        json.dumps(body),
        content_type="application/json",
        **headers,
    )


def test_the_api_answers_a_refused_update_with_422_and_the_reason(waiting_invoice):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = post_update(operator, "change_due_date", {"payload": {"due": ""}, "timeout": 0})

    assert (response.status_code, response.json()["error"]["code"]) == (422, "update_rejected")
    assert "a new due date is needed" in response.json()["error"]["message"]


def test_the_api_answers_202_when_the_update_is_stored_and_not_applied_yet(waiting_invoice):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = post_update(
        operator,
        "change_due_date",
        {"payload": {"due": "2027-02-01"}, "timeout": 0},
        HTTP_IDEMPOTENCY_KEY="ticket-1",
    )

    assert response.status_code == 202
    assert response.json() == {"update_id": "ticket-1", "status": "stored", "result": None}


def test_the_api_answers_200_with_the_result_once_applied(waiting_invoice):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))
    post_update(
        operator,
        "change_due_date",
        {"payload": {"due": "2027-02-01"}, "timeout": 0},
        HTTP_IDEMPOTENCY_KEY="ticket-1",
    )
    drive(waiting_invoice.id)

    again = post_update(
        operator,
        "change_due_date",
        {"payload": {"due": "2027-02-01"}, "timeout": 0},
        HTTP_IDEMPOTENCY_KEY="ticket-1",
    )

    assert again.status_code == 200
    assert again.json()["result"] == {"due": "2027-02-01", "changes": 1}


@pytest.mark.parametrize("body", [{"timeout": "5"}, {"timeout": True}, {"timeout": 31}])
def test_the_api_refuses_a_timeout_that_is_not_a_number_of_seconds_up_to_30(waiting_invoice, body):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    assert post_update(operator, "change_due_date", body).status_code == 400


def test_a_viewer_cannot_send_an_update(waiting_invoice):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    assert (
        post_update(viewer, "change_due_date", {"payload": {"due": "2027-02-01"}}).status_code
        == 403
    )
    assert not Signal.objects.exists()
