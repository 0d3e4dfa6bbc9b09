"""The bulk operation in headless Chromium: from the filtered run list, count, confirm, and every
run is retried."""

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from durable.models import AuditEvent, RunStatus, WorkflowRun
from tests.browser import admin_page, browser  # noqa: F401  (the fixture)
from tests.durable.bulk_runs import blocked_runs

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct-horse-battery"


@pytest.fixture
def operator_page(browser, live_server):
    user = User.objects.create_user("ops", password=PASSWORD, is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="durable",
            codename__in=["view_workflowrun", "operate_workflowrun"],
        )
    )
    with admin_page(browser, live_server, "ops", PASSWORD) as page:
        yield page


def test_an_operator_retries_every_blocked_run_of_a_version_after_seeing_the_count(
    operator_page, live_server
):
    v1 = blocked_runs("reorder:b1", "reorder:b2", "reorder:b3")
    blocked_runs("reorder:b-v2", version=2)
    page = operator_page
    page.goto(
        live_server.url + reverse("admin:durable_workflowrun_changelist") + "?status__exact=blocked"
    )

    page.get_by_role("link", name="Bulk operation…").click()
    page.select_option("select[name=action]", "retry")
    page.fill("input[name=workflow]", "reorder")
    page.fill("input[name=version]", "1")
    page.get_by_role("button", name="Count runs…").click()
    page.wait_for_load_state()
    count = page.locator("#durable-bulk-count").inner_text()
    untouched = set(WorkflowRun.objects.values_list("status", flat=True))
    page.get_by_role("button", name="Confirm: retry 3 runs").click()
    page.wait_for_load_state()

    assert "3 runs" in count and untouched == {RunStatus.BLOCKED}
    assert "3 runs sent back to pending; 0 skipped" in page.locator("ul.messagelist").inner_text()
    assert (
        sorted(
            AuditEvent.objects.filter(action="retry", actor="ops").values_list("run_id", flat=True)
        )
        == v1
    )
    assert WorkflowRun.objects.get(pk="reorder:b-v2").status == RunStatus.BLOCKED
