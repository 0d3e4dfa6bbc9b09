"""The run page's timeline: an SVG drawn on the server, steps as bars over time, the engine's
markers folded away, numbers written with a dot in every language."""

import re

import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import translation

from durable import seconds, services, workflow
from durable.testing import drive
from tests.durable.test_admin import staff_with
from tests.durable.workflows import record

pytestmark = pytest.mark.django_db


@workflow(name="timeline_demo")
def timeline_demo() -> str:
    workflow.now()
    workflow.set_attributes(stage="drawing")
    workflow.step(record, "<script>alert(1)</script>", name="<script>alert(1)</script>")
    workflow.sleep(seconds(30))
    return workflow.step(record, "after", name="after")


@pytest.fixture
def sleeping_run(clock):
    run = drive(services.run_start(timeline_demo, id="timeline:1", actor="test").id)
    clock.advance(12.5)
    return run


def run_page(client, run_id: str) -> str:
    viewer = staff_with(client, "view_workflowrun", username="viewer")
    return viewer.get(
        reverse("admin:durable_workflowrun_change", args=[quote(run_id)])
    ).content.decode()


def timeline(page: str) -> str:
    return re.search(r'<svg id="durable-timeline".*?</svg>', page, re.S).group(0)


def test_the_timeline_draws_a_bar_per_step_and_wait_and_folds_the_markers(client, sleeping_run):
    svg = timeline(run_page(client, sleeping_run.id))

    assert svg.count("<rect ") == 2  # the step and the sleep; now() and the attributes folded
    assert "2 engine markers folded away" in svg
    assert "sleep sleep: waiting" in svg


def test_a_step_name_is_escaped_in_the_timeline(client, sleeping_run):
    svg = timeline(run_page(client, sleeping_run.id))

    assert "<script>" not in svg and "&lt;script&gt;" in svg


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_the_timeline_numbers_are_written_with_a_dot_in_every_language(
    client, sleeping_run, language
):
    with translation.override(language):
        svg = timeline(run_page(client, sleeping_run.id))

    drawing = svg.split(">", 1)[
        1
    ]  # the bars, labels and axis, past the <svg> tag's own width="100%"
    numbers = re.findall(r' (?:x|y|width|height|x1|x2|y1|y2)="([^"]*)"', drawing)
    assert numbers and all(re.fullmatch(r"-?\d+(\.\d+)?", number) for number in numbers), numbers
    assert "12.5 s since the run started" in svg


def test_a_run_without_a_journal_draws_no_timeline(client, clock):
    run = services.run_start(timeline_demo, id="timeline:new", actor="test")

    assert 'id="durable-timeline"' not in run_page(client, run.id)
