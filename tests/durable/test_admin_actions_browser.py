"""The runs admin in headless Chromium: each repair button posts its own form, as the operator
clicks it."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from durable import services
from durable.models import AuditEvent, RunStatus, Signal, WorkflowRun
from durable.testing import drive
from tests.browser import admin_page, browser  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def operator_page(browser, live_server):
    user = User.objects.create_user("ops", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="durable",
            codename__in=["view_workflowrun", "operate_workflowrun", "view_auditevent"],
        )
    )
    with admin_page(browser, live_server, "ops", PASSWORD) as page:

        def open_run(run_id: str):
            page.goto(
                live_server.url + reverse("admin:durable_workflowrun_change", args=[quote(run_id)])
            )
            return page

        yield open_run


def test_wake_now_on_a_sleeping_run_wakes_it_and_is_audited(operator_page):
    run = drive(services.run_start("nap", id="nap:browser", actor="test").id)

    page = operator_page(run.id)
    page.get_by_role("button", name="Wake now").click()
    page.wait_for_load_state()

    assert f"Run {run.id} woken." in page.locator("ul.messagelist").inner_text()
    assert AuditEvent.objects.filter(run_id=run.id, action="wake", actor="ops").exists()
    assert drive(run.id).status == RunStatus.COMPLETED


def test_retry_on_a_failed_run_sends_it_back_to_pending_and_is_audited(operator_page):
    run = drive(services.run_start("fails_in_body", id="fails:browser", actor="test").id)

    page = operator_page(run.id)
    page.get_by_role("button", name="Retry").click()
    page.wait_for_load_state()

    assert run.status == RunStatus.FAILED  # as it was when the page was opened
    assert "sent back to pending" in page.locator("ul.messagelist").inner_text()
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.PENDING
    assert AuditEvent.objects.filter(run_id=run.id, action="retry", actor="ops").exists()


def test_cancel_with_a_reason_after_confirming_cancels_the_run_and_is_audited(operator_page):
    run = drive(services.run_start("step_wait_step", id="wait:browser-cancel", actor="test").id)

    page = operator_page(run.id)
    page.once("dialog", lambda dialog: dialog.accept())
    page.fill("input[name=reason]", "duplicate case")
    page.get_by_role("button", name="Cancel run").click()
    page.wait_for_load_state()

    cancelled = WorkflowRun.objects.get(pk=run.id)
    assert "cancelled" in page.locator("ul.messagelist").inner_text()
    assert (
        cancelled.status == RunStatus.CANCELLED and cancelled.error["message"] == "duplicate case"
    )
    assert AuditEvent.objects.filter(run_id=run.id, action="cancel", actor="ops").exists()


def test_a_signal_sent_from_the_run_page_is_recorded_and_audited(operator_page):
    run = drive(services.run_start("step_wait_step", id="wait:browser-signal", actor="test").id)

    page = operator_page(run.id)
    page.get_by_role("link", name="Send a signal…").click()
    page.fill("input[name=name]", "go")
    page.fill("textarea[name=payload]", '{"value": 3}')
    page.get_by_role("button", name="Send signal").click()
    page.wait_for_load_state()

    assert "recorded for run" in page.locator("ul.messagelist").inner_text()
    assert list(Signal.objects.filter(run_id=run.id).values_list("name", "payload")) == [
        ("go", {"value": 3})
    ]
    assert AuditEvent.objects.filter(run_id=run.id, action="signal", actor="ops").exists()
    assert drive(run.id).result == ["before", 3, "after"]


def test_fork_from_here_asks_first_then_opens_the_fork_and_audits_the_operator(operator_page):
    run = drive(services.run_start("step_wait_step", id="fork:browser", actor="test").id)
    services.signal_send(run.id, "go", {"value": 3}, actor="test")
    drive(run.id)

    page = operator_page(run.id)
    page.locator("#durable-journal tbody tr").nth(2).get_by_role(
        "link", name="Fork from here"
    ).click()
    page.wait_for_load_state()
    assert "Keeps 2 journal entries" in page.locator("#content-main").inner_text()
    page.get_by_role("button", name="Fork from position 2").click()
    page.wait_for_load_state()

    fork = WorkflowRun.objects.get(forked_from_id=run.id)
    assert fork.fork_position == 2
    assert f"forked at position 2: {fork.id}" in page.locator("ul.messagelist").inner_text()
    assert AuditEvent.objects.filter(run_id=run.id, action="fork", actor="ops").exists()
    assert drive(fork.id).result == ["before", 3, "after"]
