"""A NUL or another control character in a request is a 400 naming where, on every surface."""

import json

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from approvals import services as approvals_services
from durable import days
from durable import selectors as durable_selectors
from tests.approvals.conftest import make_user, start_case
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db

ADDRESSES = {
    "the queue's search": "/approvals/?q=%00",
    "the archive's search": "/approvals/archive/?q=%00",
    "the queue's assignee filter": "/approvals/?assignee=a%00b",
    "the queue's group filter": "/approvals/?group=%00",
    "the queue's workflow filter": "/approvals/?workflow=%00",
    "another control character": "/approvals/?q=a%1bb",
    "a query parameter's name": "/approvals/?q%00=x",
}
ADMIN_ADDRESSES = {
    "the admin's run filter": "/admin/durable/workflowrun/?workflow_name=%00",
    "a run's id in the admin": "/admin/durable/workflowrun/%00/change/",
}


@pytest.fixture
def lead(db):
    """A reviewer who is also a supervisor: every approvals page and action is theirs."""
    return make_user("lia", reviewer=True, groups=("compliance-supervisor",))


@pytest.fixture
def case(db, clock):
    return start_case("acme")


def refused(response) -> bool:
    return response.status_code == 400 and "control character" in response.content.decode()


@pytest.mark.parametrize("url", ADDRESSES.values(), ids=ADDRESSES.keys())
def test_a_control_character_in_a_reviewer_pages_address_is_a_400_that_says_so(lead, case, url):
    assert refused(signed_in(lead).get(url))


@pytest.mark.parametrize("url", ADMIN_ADDRESSES.values(), ids=ADMIN_ADDRESSES.keys())
def test_a_control_character_in_an_admin_address_is_a_400_that_says_so(admin_client, case, url):
    assert refused(admin_client.get(url))


def posted_reasons(case, clock) -> dict:
    later = f"{timezone.localtime(clock.now() + days(1)):%Y-%m-%dT%H:%M}"
    return {
        "approval_decide": {"outcome": "reject", "reason": "no\x00pe"},
        "approval_extend": {
            "due_at": f"{timezone.localtime(case.due_at + days(1)):%Y-%m-%dT%H:%M}",
            "reason": "bank\x00strike",
        },
        "approval_follow_up": {"follow_up_at": later, "reason": "bank\x00letter"},
        "approval_unclaim": {"reason": "on\x00leave"},
    }


@pytest.mark.parametrize(
    "url", ["approval_decide", "approval_extend", "approval_follow_up", "approval_unclaim"]
)
def test_a_nul_in_a_posted_reason_is_a_400_and_nothing_is_written(lead, case, clock, url):
    approvals_services.approval_claim(case.pk, actor=lead)

    response = signed_in(lead).post(reverse(url, args=[case.pk]), posted_reasons(case, clock)[url])

    case.refresh_from_db()
    assert refused(response) and "'reason'" in response.content.decode()
    assert list(case.audit.values_list("action", flat=True).order_by("id")) == ["create", "claim"]


def test_a_nul_in_a_multipart_field_is_a_400(lead, case):
    response = signed_in(lead).post(
        reverse("approval_note", args=[case.pk]), {"reason": "a\x00b"}
    )  # multipart

    assert refused(response)


def test_a_nul_in_the_admins_cancel_reason_is_a_400_and_the_run_goes_on(admin_client, case):
    url = reverse("admin:durable_workflowrun_cancel", args=[quote(case.run_id)])

    response = admin_client.post(
        url, "reason=no%00pe", content_type="application/x-www-form-urlencoded"
    )

    assert refused(response)
    assert durable_selectors.run_get(case.run_id).status == "waiting"


def test_line_breaks_and_tabs_in_a_reason_are_text_not_control_characters(lead, case):
    approvals_services.approval_claim(case.pk, actor=lead)

    response = signed_in(lead).post(
        reverse("approval_note", args=[case.pk]), {"reason": "first line\r\n\tsecond"}
    )

    assert response.status_code == 302
    assert case.audit.filter(action="note", reason="first line\r\n\tsecond").exists()


# --- the API and the webhooks check their own input, and answer in their own format ---

API_ADDRESSES = {
    "a run filter": ("get", "/api/runs/?workflow=%00"),
    "a run id": ("get", "/api/runs/a%00b/"),
    "a run id to signal": ("post", "/api/runs/a%00b/signals/"),
    "a schedule's name": ("post", "/api/schedules/a%00b/pause/"),
    "an invoice number": ("post", "/api/invoices/NF%00/void/"),
}


@pytest.fixture
def operator(db):
    """Signed in to the API with every permission."""
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", password="x"))
    return client


@pytest.mark.parametrize("method, url", API_ADDRESSES.values(), ids=API_ADDRESSES.keys())
def test_the_api_answers_a_control_character_in_its_address_in_its_own_error_format(
    operator, method, url
):
    if method == "get":
        response = operator.get(url)
    else:
        response = operator.post(
            url, json.dumps({"name": "x", "reason": "x"}), content_type="application/json"
        )

    assert response.status_code in (400, 404)
    assert response["Content-Type"].startswith("application/json")


API_BODIES = {
    "a workflow to start": ("/api/runs/", {"workflow": "approval_test\x00"}),
    "a signal's name": ("/api/runs/{run}/signals/", {"name": "go\x00"}),
    "a signal's payload": (
        "/api/runs/{run}/signals/",
        {"name": "go", "payload": {"note": "a\x00b"}},
    ),
    "a cancel's reason": ("/api/runs/{run}/cancel/", {"reason": "no\x00pe"}),
}


@pytest.mark.parametrize("url, body", API_BODIES.values(), ids=API_BODIES.keys())
def test_a_nul_in_a_json_string_is_a_400_from_the_api_and_nothing_is_written(
    operator, case, url, body
):
    response = operator.post(
        url.format(run=case.run_id), json.dumps(body), content_type="application/json"
    )

    assert response.status_code == 400 and response.json()["error"]["code"] in (
        "invalid",
        "payload_error",
    )
    assert durable_selectors.run_get(case.run_id).status == "waiting"
