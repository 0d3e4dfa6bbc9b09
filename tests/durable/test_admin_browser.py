"""The runs admin in headless Chromium, on the demo's own data, at a laptop's 1366 px."""

import io
import re

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import User
from django.core.management import call_command
from django.urls import reverse

from durable.models import WorkflowRun
from tests.browser import browser  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PASSWORD = "pw-admin-browser-1"
COLUMNS = ["id", "workflow", "status", "waiting for", "wake at", "advances", "updated at"]
STAMP = re.compile(
    r"^\d\d/\d\d/\d{4} \d\d:\d\d:\d\d [A-Z+\-0-9]+$"
)  # the reader's date, seconds and a time zone


@pytest.fixture
def demo_data():
    call_command("seed_approvals_demo", stdout=io.StringIO())
    call_command("seed_demo", stdout=io.StringIO())
    User.objects.create_superuser("admin-browser", password=PASSWORD)


@pytest.fixture
def admin_page(browser, live_server, demo_data):  # noqa: F811
    context = browser.new_context(viewport={"width": 1366, "height": 768})
    page = context.new_page()
    page.set_default_timeout(15000)
    page.goto(f"{live_server.url}/admin/login/?next=/admin/durable/workflowrun/")
    page.fill("input[name=username]", "admin-browser")
    page.fill("input[name=password]", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#result_list")
    yield page
    context.close()


def test_at_1366_px_the_run_list_shows_every_column_without_scrolling_sideways(admin_page):
    headers = admin_page.eval_on_selector_all(
        "#result_list thead th",
        "ths => ths.map(th => ({text: th.innerText.trim(), "
        "right: th.getBoundingClientRect().right}))",
    )
    widths = admin_page.evaluate("""() => ({
        viewport: window.innerWidth,
        page: document.documentElement.scrollWidth,
        results: [document.querySelector('.results').scrollWidth, \
document.querySelector('.results').clientWidth],
    })""")

    shown = [header["text"].lower() for header in headers if header["text"]]
    assert shown == COLUMNS, headers
    assert widths["page"] <= widths["viewport"], widths
    assert widths["results"][0] <= widths["results"][1], widths
    assert all(header["right"] <= widths["viewport"] for header in headers), (headers, widths)


def test_the_run_list_shows_wake_and_update_times_to_the_second_with_their_zone(admin_page):
    cells = admin_page.eval_on_selector_all(
        "#result_list td.field-wake_at_stamp time, #result_list td.field-updated_at_stamp time",
        "times => times.map(t => t.innerText.replace(/\\s+/g, ' ').trim())",
    )

    assert len(cells) >= 13  # every run has an update time; the waiting ones a wake time
    assert all(STAMP.match(cell) for cell in cells), cells


def test_a_run_pages_timeline_draws_its_bars_in_the_browser(admin_page):
    run_id = (
        WorkflowRun.objects.filter(journal__kind="step")
        .order_by("created_at")
        .values_list("id", flat=True)
        .first()
    )
    admin_page.goto(
        admin_page.url.split("/admin/")[0]
        + reverse("admin:durable_workflowrun_change", args=[quote(run_id)])
    )

    bars = admin_page.eval_on_selector_all(
        "#durable-timeline rect", "rects => rects.map(r => r.getBBox().width)"
    )
    box = admin_page.eval_on_selector(
        "#durable-timeline", "svg => svg.getBoundingClientRect().width"
    )

    assert bars and all(width > 0 for width in bars), bars
    assert 0 < box <= 1366


def test_on_a_390_px_phone_the_timeline_shrinks_to_the_screen(admin_page):
    run_id = (
        WorkflowRun.objects.filter(journal__kind="step")
        .order_by("created_at")
        .values_list("id", flat=True)
        .first()
    )
    admin_page.set_viewport_size({"width": 390, "height": 844})
    admin_page.goto(
        admin_page.url.split("/admin/")[0]
        + reverse("admin:durable_workflowrun_change", args=[quote(run_id)])
    )

    drawn = admin_page.evaluate("""() => {
        const svg = document.querySelector('#durable-timeline'), box = svg.getBoundingClientRect();
        const holder = svg.parentElement;
        return {left: box.left, right: box.right, width: box.width, viewport: window.innerWidth,
                holder: [holder.scrollWidth, holder.clientWidth],
                bars: [...svg.querySelectorAll('rect')].map(r => r.getBoundingClientRect().width)};
    }""")

    assert drawn["width"] > 0 and drawn["left"] >= 0 and drawn["right"] <= drawn["viewport"], drawn
    assert drawn["holder"][0] <= drawn["holder"][1], drawn  # nothing hidden to the side
    assert drawn["bars"] and all(width > 0 for width in drawn["bars"]), drawn
