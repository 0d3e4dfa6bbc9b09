"""Forking from the operators' surfaces: ``manage.py durable fork``, ``POST /api/runs/<id>/fork/``
and the admin's "Fork from here"; each confirms first and records who forked."""

import io
import json

import pytest
from django.contrib.admin.utils import quote
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from durable import services
from durable.models import AuditEvent, RunStatus, WorkflowRun
from durable.testing import drive
from tests.durable.test_admin import staff_with
from tests.durable.test_api import client_for, user_with

pytestmark = pytest.mark.django_db

SOURCE = "orders:c-7/a b"


@pytest.fixture
def finished_run(clock) -> WorkflowRun:
    """step_wait_step, completed: 0 step 'record', 1 signal 'go', 2 step 'record'."""
    run = drive(services.run_start("step_wait_step", id=SOURCE, actor="test").id)
    services.signal_send(run.id, "go", {"value": 1}, actor="test")
    run = drive(run.id)
    assert run.status == RunStatus.COMPLETED
    return run


def forks_of(run_id: str) -> list[WorkflowRun]:
    return list(WorkflowRun.objects.filter(forked_from_id=run_id))


# --- manage.py durable fork ---


def durable(*argv: str) -> str:
    out = io.StringIO()
    call_command("durable", *argv, stdout=out)
    return out.getvalue()


def test_the_command_says_what_it_keeps_and_forks_when_told_yes(finished_run):
    printed = durable("fork", SOURCE, "--at", "2", "--yes", "--id", "orders:c-7:again")

    assert "keeps 2 entries" in printed and "runs again from: step 'record'" in printed
    fork = WorkflowRun.objects.get(pk="orders:c-7:again")
    assert (fork.forked_from_id, fork.fork_position) == (SOURCE, 2)
    assert AuditEvent.objects.get(run_id=SOURCE, action="fork").actor.startswith("cli:")


def test_the_command_without_a_terminal_or_yes_forks_nothing_and_exits_2(finished_run, monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))

    with pytest.raises(CommandError, match="--yes") as refused:
        durable("fork", SOURCE, "--at", "2")

    assert refused.value.returncode == 2
    assert forks_of(SOURCE) == []


def test_the_command_refuses_a_position_past_the_journal_with_the_reason(finished_run):
    with pytest.raises(CommandError, match="past them") as refused:
        durable("fork", SOURCE, "--at", "9", "--yes")

    assert refused.value.returncode == 1
    assert forks_of(SOURCE) == []


def test_status_shows_where_a_fork_came_from_and_the_sources_forks(finished_run):
    fork = services.run_fork(SOURCE, at_position=1, actor="test", id="orders:c-7:b")

    assert f"forked    from {SOURCE} at position 1" in durable("status", fork.id)
    assert "forks     orders:c-7:b (at 1)" in durable("status", SOURCE)


# --- POST /api/runs/<id>/fork/ ---

FORK_URL = "/api/runs/orders:c-7%2Fa%20b/fork/"


def post_fork(client, body):
    return client.post(FORK_URL, json.dumps(body), content_type="application/json")


def test_the_api_forks_with_201_and_names_the_source(finished_run):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = post_fork(operator, {"at_position": 1})

    assert response.status_code == 201
    body = response.json()
    assert (body["forked_from"], body["fork_position"], body["status"]) == (SOURCE, 1, "pending")
    assert AuditEvent.objects.get(run_id=SOURCE, action="fork").actor == "operator"


def test_the_api_answers_the_same_fork_again_with_200(finished_run):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))
    post_fork(operator, {"at_position": 1, "id": "orders:c-7:b"})

    again = post_fork(operator, {"at_position": 1, "id": "orders:c-7:b"})

    assert again.status_code == 200
    assert len(forks_of(SOURCE)) == 1


def test_the_source_lists_its_forks_in_the_api(finished_run):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))
    fork_id = post_fork(operator, {"at_position": 1}).json()["id"]

    detail = operator.get("/api/runs/orders:c-7%2Fa%20b/").json()

    assert detail["forks"] == [fork_id]
    assert detail["forked_from"] is None


def test_the_api_refuses_a_position_in_a_wait_with_409_and_the_reason(clock):
    drive(services.run_start("step_wait_step", id=SOURCE, actor="test").id)
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = post_fork(operator, {"at_position": 2})

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_fork"
    assert "waiting" in response.json()["error"]["message"]
    assert forks_of(SOURCE) == []


@pytest.mark.parametrize(
    "body", [{}, {"at_position": -1}, {"at_position": "1"}, {"at_position": 1.0}]
)
def test_the_api_refuses_a_missing_or_mistyped_position_with_400(finished_run, body):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    response = post_fork(operator, body)

    assert response.status_code == 400
    assert "at_position" in response.json()["error"]["detail"]


def test_a_viewer_cannot_fork_through_the_api(finished_run):
    viewer = client_for(user_with("view_workflowrun", username="viewer"))

    assert post_fork(viewer, {"at_position": 1}).status_code == 403
    assert forks_of(SOURCE) == []


def test_forking_an_unknown_run_is_a_404(clock):
    operator = client_for(user_with("view_workflowrun", "operate_workflowrun"))

    assert post_fork(operator, {"at_position": 0}).status_code == 404


# --- the admin's "Fork from here" ---


def fork_page(position) -> str:
    return reverse("admin:durable_workflowrun_fork", args=[quote(SOURCE)]) + f"?at={position}"


def test_each_journal_row_links_to_a_fork_from_there(client, finished_run):
    operator = staff_with(client, "view_workflowrun", "operate_workflowrun")

    page = operator.get(
        reverse("admin:durable_workflowrun_change", args=[quote(SOURCE)])
    ).content.decode()

    assert page.count("Fork from here") == 3
    assert f"{reverse('admin:durable_workflowrun_fork', args=[quote(SOURCE)])}?at=2" in page


def test_the_confirmation_says_what_is_kept_and_forks_nothing_yet(client, finished_run):
    operator = staff_with(client, "view_workflowrun", "operate_workflowrun")

    page = operator.get(fork_page(1)).content.decode()

    assert "Keeps 1 journal entry" in page
    assert 'signal <code translate="no">go</code>' in page
    assert forks_of(SOURCE) == []


def test_confirming_forks_records_the_operator_and_opens_the_fork(client, finished_run):
    operator = staff_with(client, "view_workflowrun", "operate_workflowrun")

    response = operator.post(fork_page(1), {"at": "1"})

    fork = forks_of(SOURCE)[0]
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "admin:durable_workflowrun_change", args=[quote(fork.id)]
    )
    assert AuditEvent.objects.get(run_id=SOURCE, action="fork").actor == "ops"
    assert drive(fork.id).status == RunStatus.COMPLETED


def test_the_fork_page_links_back_to_its_source(client, finished_run):
    operator = staff_with(client, "view_workflowrun", "operate_workflowrun")
    fork = services.run_fork(SOURCE, at_position=1, actor="test")

    page = operator.get(
        reverse("admin:durable_workflowrun_change", args=[quote(fork.id)])
    ).content.decode()

    assert reverse("admin:durable_workflowrun_change", args=[quote(SOURCE)]) in page
    assert "at position 1" in page


def test_the_confirmation_of_a_refused_position_says_why_and_offers_no_fork(client, finished_run):
    operator = staff_with(client, "view_workflowrun", "operate_workflowrun")

    page = operator.get(fork_page(7)).content.decode()
    posted = operator.post(fork_page(7), {"at": "7"})

    assert "past them" in page and 'type="submit"' not in page.split('id="content-main"')[1]
    assert posted.status_code == 200
    assert forks_of(SOURCE) == []


def test_a_viewer_gets_no_fork_link_and_no_fork(client, finished_run):
    viewer = staff_with(client, "view_workflowrun", username="viewer")

    page = viewer.get(
        reverse("admin:durable_workflowrun_change", args=[quote(SOURCE)])
    ).content.decode()
    posted = viewer.post(fork_page(1), {"at": "1"})

    assert "Fork from here" not in page
    assert posted.status_code == 403
    assert forks_of(SOURCE) == []
