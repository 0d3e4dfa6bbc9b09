"""The admin's bulk operation: form, a confirmation page with the count (nothing done yet), then the
act."""

import re

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from durable import services
from durable.models import AuditEvent, RunStatus, WorkflowRun
from durable.testing import drive
from tests.durable.bulk_runs import blocked_runs
from tests.durable.test_admin import staff_with

pytestmark = pytest.mark.django_db

BULK = reverse("admin:durable_workflowrun_bulk")
RETRY_V1 = {"action": "retry", "status": "blocked", "workflow": "reorder", "version": "1"}


@pytest.fixture
def operator(client):
    return staff_with(client, "view_workflowrun", "operate_workflowrun")


@pytest.fixture
def viewer(client):
    return staff_with(client, "view_workflowrun", username="viewer")


@pytest.fixture
def blocked_v1_and_v2(clock):
    return blocked_runs("reorder:1", "reorder:2"), blocked_runs("reorder:v2", version=2)


def token_in(html: str) -> str:
    return re.search(r'name="token" value="([^"]+)"', html).group(1)


def test_the_confirmation_page_shows_the_count_and_changes_nothing(operator, blocked_v1_and_v2):
    response = operator.post(BULK, RETRY_V1)

    html = response.content.decode()
    assert response.status_code == 200
    assert "Retry (failed or blocked runs): 2 runs" in html and "of 2 the filter keeps" in html
    assert "reorder:1" in html and "reorder:v2" not in html and "Confirm: retry 2 runs" in html
    assert set(WorkflowRun.objects.values_list("status", flat=True)) == {RunStatus.BLOCKED}
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_confirming_retries_each_run_with_its_own_audit_row_and_reports_the_counts(
    operator, blocked_v1_and_v2
):
    token = token_in(operator.post(BULK, RETRY_V1).content.decode())

    response = operator.post(BULK, {"token": token})

    assert response.status_code == 302 and response["Location"] == reverse(
        "admin:durable_workflowrun_changelist"
    )
    assert [str(message) for message in get_messages(response.wsgi_request)][0].startswith(
        "2 runs sent back to pending; 0 skipped"
    )
    retries = AuditEvent.objects.filter(action="retry")
    assert sorted(retries.values_list("run_id", "actor")) == [
        ("reorder:1", "ops"),
        ("reorder:2", "ops"),
    ]
    assert all(event.detail["via"] == "admin" for event in retries)
    assert WorkflowRun.objects.get(pk="reorder:v2").status == RunStatus.BLOCKED


def test_a_run_finished_between_count_and_confirm_is_left_out(operator, clock):
    for n in range(2):
        drive(services.run_start("step_wait_step", id=f"wait:{n}", actor="test").id)
    token = token_in(
        operator.post(BULK, {"action": "cancel", "workflow": "step_wait_step"}).content.decode()
    )
    services.run_cancel("wait:1", reason="by hand", actor="colleague")

    response = operator.post(BULK, {"token": token})

    assert str(list(get_messages(response.wsgi_request))[0]).startswith("1 run cancelled")
    assert list(
        AuditEvent.objects.filter(action="cancel").values_list("run_id", "actor").order_by("run_id")
    ) == [("wait:0", "ops"), ("wait:1", "colleague")]


def test_the_form_starts_from_the_run_lists_filters(operator, blocked_v1_and_v2):
    html = operator.get(
        BULK, {"status__exact": "blocked", "workflow_name": "reorder", "stage": "in review"}
    ).content.decode()

    assert '<option value="blocked" selected>' in html
    assert 'name="workflow" value="reorder"' in html and "stage=in review</textarea>" in html


def test_the_run_list_links_to_the_bulk_form_with_its_filters(operator, blocked_v1_and_v2):
    html = operator.get(
        reverse("admin:durable_workflowrun_changelist"), {"status__exact": "blocked"}
    ).content.decode()

    assert f'href="{BULK}?status__exact=blocked"' in html


@pytest.mark.parametrize(
    "form, message",
    [
        ({"action": "wake"}, "Choose at least one filter"),
        ({"action": "wake", "attributes": "cnpj"}, "is not name=value"),
        ({"action": "wake", "attributes": "no-dash=1"}, "must be an identifier"),
        ({"action": "wake", "status": "sleeping"}, "Select a valid choice"),
        ({"action": "delete", "status": "failed"}, "Select a valid choice"),
    ],
)
def test_a_bad_filter_is_a_400_with_the_form_saying_why(operator, form, message):
    response = operator.post(BULK, form)

    assert response.status_code == 400 and message in response.content.decode()


def test_too_many_runs_is_refused_on_the_form_page(operator, blocked_v1_and_v2, settings):
    settings.DURABLE_BULK_MAX_RUNS = 1

    response = operator.post(BULK, RETRY_V1)

    assert response.status_code == 400 and "2 runs match" in response.content.decode()


def test_a_viewer_gets_403_on_the_form_and_the_confirmation(viewer, blocked_v1_and_v2):
    refusals = [
        viewer.get(BULK),
        viewer.post(BULK, RETRY_V1),
        viewer.post(BULK, {"token": "anything"}),
    ]

    assert [response.status_code for response in refusals] == [403, 403, 403]
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_the_run_list_offers_no_bulk_link_to_a_viewer(viewer):
    html = viewer.get(reverse("admin:durable_workflowrun_changelist")).content.decode()

    assert BULK not in html


def test_a_forged_token_is_a_400_and_acts_on_nothing(operator, blocked_v1_and_v2):
    response = operator.post(BULK, {"token": "forged"})

    assert response.status_code == 400 and "not one this server issued" in response.content.decode()
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_the_bulk_form_refuses_a_post_without_the_csrf_token(blocked_v1_and_v2):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    staff_with(client, "view_workflowrun", "operate_workflowrun")

    response = client.post(BULK, RETRY_V1)

    assert response.status_code == 403 and "CSRF" in response.content.decode()
    assert set(WorkflowRun.objects.values_list("status", flat=True)) == {RunStatus.BLOCKED}


def test_a_pass_that_runs_out_of_time_offers_to_continue_with_the_runs_left(
    operator, blocked_v1_and_v2, settings
):
    settings.DURABLE_BULK_PASS_SECONDS = 0  # every pass stops after its first run
    token = token_in(operator.post(BULK, RETRY_V1).content.decode())

    first = operator.post(BULK, {"token": token})
    second = operator.post(BULK, {"token": token_in(first.content.decode())})

    assert (
        "1 run left." in first.content.decode()
        and "Continue: retry 1 more" in first.content.decode()
    )
    assert second.status_code == 302
    assert sorted(AuditEvent.objects.filter(action="retry").values_list("run_id", flat=True)) == [
        "reorder:1",
        "reorder:2",
    ]


def test_a_double_clicked_confirm_acts_once(operator, clock):
    drive(services.run_start("nap", id="nap:twice", actor="test").id)
    token = token_in(operator.post(BULK, {"action": "wake", "workflow": "nap"}).content.decode())
    operator.post(BULK, {"token": token})

    again = operator.post(BULK, {"token": token})

    assert again.status_code == 400 and "used already" in again.content.decode()
    assert AuditEvent.objects.filter(action="wake").count() == 1
