"""The Content-Security-Policy: sent on every page, and every page people use passes it in a
real browser (a blocked inline script is a button that silently does nothing)."""

import pytest
from django.contrib.auth import get_user_model

from approvals import services
from tests.approvals.conftest import PASSWORD, make_user
from tests.approvals.test_browser import onboarding_waiting_for_compliance
from tests.browser import browser  # noqa: F401 (a fixture)

# Every violation the page reports, kept before any of the page's own scripts runs.
LISTEN = """window.__violations = [];
document.addEventListener('securitypolicyviolation', e => window.__violations.push(
    [e.violatedDirective, e.blockedURI, (e.sourceFile || '') + ':' + e.lineNumber, e.sample]));"""


def test_every_response_carries_the_policy(client, db):
    for path in ("/login/", "/admin/login/", "/approvals/"):
        policy = client.get(path)["Content-Security-Policy"]

        assert (
            "script-src 'self'" in policy
            and "frame-ancestors 'none'" in policy
            and "unsafe" not in policy
        )


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_reviewer_pages_the_admin_and_the_api_docs_raise_no_violation(browser, live_server):  # noqa: F811
    root = make_user("root", reviewer=True, groups=("kyc", services.SUPERVISOR_GROUP))
    get_user_model().objects.filter(pk=root.pk).update(is_staff=True, is_superuser=True)
    case = onboarding_waiting_for_compliance()
    paths = [
        "/approvals/",
        f"/approvals/{case.pk}/",
        "/approvals/mine/",
        "/approvals/archive/",
        "/approvals/team/",
        "/approvals/dashboard/",
        "/admin/",
        "/admin/durable/workflowrun/",
        f"/admin/durable/workflowrun/{case.run_id}/change/",
        "/admin/approvals/approvalrequest/",
        "/api/docs/",
    ]
    context = browser.new_context()
    context.add_init_script(LISTEN)
    page = context.new_page()
    page.goto(live_server.url + "/login/")
    login_violations = page.evaluate("window.__violations")
    page.fill("input[name=username]", "root")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()

    violations, statuses = {}, {}
    for path in paths:
        statuses[path] = page.goto(live_server.url + path).status
        page.wait_for_load_state("networkidle")
        page.wait_for_timeout(100)
        violations[path] = page.evaluate("window.__violations")
        if path == "/api/docs/":  # its script (a file now) did draw the operations
            drawn = page.locator("#swagger-ui .opblock").count()
    context.close()

    assert login_violations == []
    assert statuses == dict.fromkeys(paths, 200)
    assert violations == dict.fromkeys(paths, [])
    assert drawn > 10
