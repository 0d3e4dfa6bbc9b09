"""A NUL or another control character in a request is a 400 naming where, on every surface."""
import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

PROBES = {
    "the queue's search": ("get", "/approvals/?q=%00"),
    "the queue's assignee filter": ("get", "/approvals/?assignee=a%00b"),
    "the admin's run filter": ("get", "/admin/durable/workflowrun/?workflow_name=%00"),
    "a run's id in the admin": ("get", "/admin/durable/workflowrun/%00/change/"),
}


@pytest.mark.parametrize("method, url", PROBES.values(), ids=PROBES.keys())
def test_a_control_character_in_the_address_is_a_400_that_says_so(admin_client, method, url):
    response = getattr(admin_client, method)(url)

    assert response.status_code == 400
    assert "control character" in response.content.decode()


def test_the_api_answers_a_control_character_in_its_own_error_format(admin_client):
    response = admin_client.get("/api/runs/?workflow=%00")

    assert response.status_code in (200, 400)
    assert response["Content-Type"].startswith("application/json")


def test_a_control_character_in_a_posted_reason_is_a_400_before_anything_is_read(admin_client):
    response = admin_client.post(reverse("approval_decide", args=[1]), {"outcome": "reject", "reason": "no\x00pe"})

    assert response.status_code == 400
    assert "'reason'" in response.content.decode()


def test_line_breaks_and_tabs_in_a_reason_are_text_not_control_characters(admin_client):
    response = admin_client.post(reverse("approval_decide", args=[1]),
                                 {"outcome": "reject", "reason": "first line\r\n\tsecond"})

    assert "control character" not in response.content.decode()
