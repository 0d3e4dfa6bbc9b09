"""Bulk operations through the API: a dry run counts, a token or the same filter acts, one audit row
per run."""

import json
from datetime import timedelta

import pytest

from durable import hooks, services
from durable.models import AuditEvent, RunStatus, WorkflowRun
from durable.testing import drive
from tests.durable.bulk_runs import blocked_runs
from tests.durable.test_api import client_for, user_with

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator():
    return client_for(user_with("view_workflowrun", "operate_workflowrun"))


@pytest.fixture
def viewer():
    return client_for(user_with("view_workflowrun", username="viewer"))


@pytest.fixture
def blocked_v1_and_v2(clock):
    return blocked_runs("reorder:1", "reorder:2", "reorder:3"), blocked_runs(
        "reorder:v2", version=2
    )


def bulk(client, body, path="/api/bulk/"):
    return client.post(path, json.dumps(body), content_type="application/json")


RETRY_V1 = {"action": "retry", "filter": {"status": "blocked", "workflow": "reorder", "version": 1}}


def statuses() -> dict:
    return dict(WorkflowRun.objects.values_list("id", "status"))


def test_a_dry_run_counts_the_runs_and_changes_nothing(operator, blocked_v1_and_v2):
    before, audit_rows = statuses(), AuditEvent.objects.count()

    response = bulk(operator, {**RETRY_V1, "dry_run": True})

    body = response.json()
    assert response.status_code == 200
    assert body["dry_run"] is True and body["count"] == 3 and body["matched"] == 3
    assert body["sample"] == ["reorder:1", "reorder:2", "reorder:3"] and body["token"]
    assert statuses() == before and AuditEvent.objects.count() == audit_rows


def test_retry_of_every_blocked_run_of_a_version_writes_one_audit_row_per_run(
    operator, blocked_v1_and_v2
):
    v1, v2 = blocked_v1_and_v2

    response = bulk(operator, RETRY_V1)

    body = response.json()
    assert response.status_code == 200 and body["acted"] == 3 and body["skipped"] == 0
    assert dict(statuses().items()) == {
        **dict.fromkeys(v1, RunStatus.PENDING),
        "reorder:v2": RunStatus.BLOCKED,
    }
    retries = AuditEvent.objects.filter(action="retry")
    assert sorted(retries.values_list("run_id", flat=True)) == v1
    assert {(event.actor, event.detail["bulk"]["id"]) for event in retries} == {
        ("operator", body["bulk_id"])
    }


def test_the_confirm_token_acts_on_the_previewed_runs_only(operator, blocked_v1_and_v2, clock):
    preview = bulk(operator, {**RETRY_V1, "dry_run": True}).json()
    clock.advance(timedelta(seconds=1))
    blocked_runs("reorder:later")  # blocked after the operator saw the count

    response = bulk(operator, {"token": preview["token"]}, path="/api/bulk/confirm/")

    assert response.status_code == 200 and response.json()["acted"] == 3
    assert WorkflowRun.objects.get(pk="reorder:later").status == RunStatus.BLOCKED


def test_a_run_whose_status_changed_before_its_turn_is_skipped_and_reported(operator, clock):
    for n in range(3):
        drive(services.run_start("step_wait_step", id=f"wait:{n}", actor="test").id)

    def someone_else_cancels_the_last(run_id, **kwargs):
        if run_id == "wait:0":
            services.run_cancel("wait:2", reason="by hand", actor="colleague")

    hooks.run_cancelled.connect(someone_else_cancels_the_last, weak=False)
    try:
        response = bulk(operator, {"action": "cancel", "filter": {"workflow": "step_wait_step"}})
    finally:
        hooks.run_cancelled.disconnect(someone_else_cancels_the_last)

    body = response.json()
    assert (body["acted"], body["skipped"]) == (2, 1)
    assert (
        body["skipped_runs"][0]["id"] == "wait:2"
        and "already cancelled" in body["skipped_runs"][0]["reason"]
    )
    assert (
        AuditEvent.objects.filter(run_id="wait:2", action="cancel").count() == 1
    )  # the colleague's only


def test_wake_by_search_attribute_wakes_only_the_runs_with_that_value(operator, clock):
    drive(services.run_start("staged", "11222333000181", id="staged:a", actor="test").id)
    drive(services.run_start("staged", "99888777000166", id="staged:b", actor="test").id)

    response = bulk(operator, {"action": "wake", "filter": {"attr.cnpj": "11222333000181"}})

    assert response.json()["acted"] == 1
    assert list(AuditEvent.objects.filter(action="wake").values_list("run_id", flat=True)) == [
        "staged:a"
    ]


def test_a_graceful_bulk_cancel_lets_each_workflow_clean_up(operator, clock):
    for customer in ("c-1", "c-2"):
        drive(
            services.run_start("polite_cancel", customer, id=f"polite:{customer}", actor="test").id
        )

    response = bulk(
        operator,
        {
            "action": "cancel",
            "graceful": True,
            "reason": "campaign closed",
            "filter": {"workflow": "polite_cancel", "status": "waiting"},
        },
    )

    assert response.json()["acted"] == 2
    assert [drive(f"polite:{customer}").result for customer in ("c-1", "c-2")] == [
        "bye: campaign closed (operator)",
        "bye: campaign closed (operator)",
    ]


def test_runs_read_in_small_batches_are_each_acted_on_once(operator, clock, settings):
    settings.DURABLE_BULK_BATCH = 2
    for n in range(5):
        drive(services.run_start("nap", id=f"nap:{n}", actor="test").id)

    response = bulk(operator, {"action": "wake", "filter": {"workflow": "nap"}})

    assert response.json()["acted"] == 5
    assert sorted(AuditEvent.objects.filter(action="wake").values_list("run_id", flat=True)) == [
        f"nap:{n}" for n in range(5)
    ]


def test_a_viewer_can_neither_preview_nor_confirm(viewer, operator, blocked_v1_and_v2):
    token = bulk(operator, {**RETRY_V1, "dry_run": True}).json()["token"]

    refusals = [
        bulk(viewer, {**RETRY_V1, "dry_run": True}),
        bulk(viewer, RETRY_V1),
        bulk(viewer, {"token": token}, path="/api/bulk/confirm/"),
    ]

    assert [response.status_code for response in refusals] == [403, 403, 403]
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_a_token_issued_to_another_operator_is_refused(operator, blocked_v1_and_v2):
    token = bulk(operator, {**RETRY_V1, "dry_run": True}).json()["token"]
    colleague = client_for(
        user_with("view_workflowrun", "operate_workflowrun", username="colleague")
    )

    response = bulk(colleague, {"token": token}, path="/api/bulk/confirm/")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bulk_token_invalid"
    assert "another user" in response.json()["error"]["message"]
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_a_tampered_token_is_refused(operator, blocked_v1_and_v2):
    token = bulk(operator, {**RETRY_V1, "dry_run": True}).json()["token"]

    response = bulk(operator, {"token": token[:-3] + "xyz"}, path="/api/bulk/confirm/")

    assert response.status_code == 400 and response.json()["error"]["code"] == "bulk_token_invalid"


def test_more_runs_than_the_limit_is_a_400_that_says_to_narrow_the_filter(
    operator, blocked_v1_and_v2, settings
):
    settings.DURABLE_BULK_MAX_RUNS = 2

    response = bulk(operator, {**RETRY_V1, "dry_run": True})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bulk_too_large"
    assert "3 runs match" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "bad_filter, named",
    [
        ({}, "At least one filter"),
        ({"status": "sleeping"}, "status"),
        ({"colour": "red"}, "Unknown filter 'colour'"),
        ({"attr.no-dash": "x"}, "attr.no-dash"),
        ({"attr.cnpj": 11222333000181}, "attr.cnpj"),
        ({"workflow": ""}, "workflow"),
        ({"version": 0}, "version"),
        ({"version": "1"}, "A whole number"),
        ({"workflow": 1}, "A string"),
        ("status=blocked", "JSON object"),
    ],
)
def test_a_bad_filter_is_a_400_naming_what_is_wrong(operator, bad_filter, named):
    response = bulk(operator, {"action": "cancel", "filter": bad_filter, "dry_run": True})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert named in json.dumps(response.json()["error"]["detail"])


def test_an_unknown_action_is_a_400(operator):
    response = bulk(operator, {"action": "delete", "filter": {"status": "failed"}})

    assert response.status_code == 400 and "action" in response.json()["error"]["detail"]


def test_a_pass_that_runs_out_of_time_hands_back_a_token_that_goes_on_where_it_stopped(
    operator, clock, settings
):
    settings.DURABLE_BULK_PASS_SECONDS = 0  # every pass stops after its first run
    for n in range(3):
        drive(services.run_start("nap", id=f"nap:{n}", actor="test").id)

    first = bulk(operator, {"action": "wake", "filter": {"workflow": "nap"}}).json()
    second = bulk(operator, {"token": first["resume_token"]}, path="/api/bulk/confirm/").json()
    third = bulk(operator, {"token": second["resume_token"]}, path="/api/bulk/confirm/").json()

    assert [(p["acted"], p["remaining"]) for p in (first, second, third)] == [
        (1, 2),
        (1, 1),
        (1, 0),
    ]
    assert third["resume_token"] == "" and {
        first["bulk_id"],
        second["bulk_id"],
        third["bulk_id"],
    } == {first["bulk_id"]}
    assert sorted(AuditEvent.objects.filter(action="wake").values_list("run_id", flat=True)) == [
        "nap:0",
        "nap:1",
        "nap:2",
    ]


def test_a_confirmation_token_acts_once(operator, clock):
    drive(services.run_start("nap", id="nap:once", actor="test").id)
    token = bulk(
        operator, {"action": "wake", "filter": {"workflow": "nap"}, "dry_run": True}
    ).json()["token"]
    bulk(operator, {"token": token}, path="/api/bulk/confirm/")

    again = bulk(operator, {"token": token}, path="/api/bulk/confirm/")

    assert again.status_code == 400 and "used already" in again.json()["error"]["message"]
    assert AuditEvent.objects.filter(action="wake").count() == 1
