"""The run list at scale: no page counts the whole table, and no filter reads every run for its
choices (benchmarks/pages.py measures it with a million runs)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from durable.models import WorkflowRun
from durable.surfaces.admin import paging
from tests.durable.test_admin import operator  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
LIST = reverse("admin:durable_workflowrun_changelist")
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="the table's row estimate is PostgreSQL's (pg_class.reltuples)",
)


@pytest.fixture
def runs(clock):
    """Twelve runs of two workflows, a second apart, the newest one in review."""
    now = clock.now()
    WorkflowRun.objects.bulk_create(
        [
            WorkflowRun(
                id=f"scale:{n:02d}",
                workflow_name="billing" if n % 2 else "onboarding",
                input={},
                attributes={"stage": "in review" if n == 11 else "awaiting documents"},
                created_at=now - timedelta(seconds=11 - n),
                updated_at=now,
            )
            for n in range(12)
        ]
    )


def counts_of_the_table(queries) -> list[str]:
    return [
        query["sql"]
        for query in queries
        if "COUNT(" in query["sql"].upper() and "LIMIT" not in query["sql"]
    ]


@on_postgresql
def test_an_unfiltered_list_of_a_large_table_reads_the_estimate_and_counts_nothing(
    operator, runs, monkeypatch
):  # noqa: F811
    monkeypatch.setattr(paging, "ESTIMATE_ABOVE", 5)  # twelve runs stand for a million
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE durable_workflowrun")

    with CaptureQueriesContext(connection) as queries:
        response = operator.get(LIST)

    assert response.status_code == 200
    assert counts_of_the_table(queries.captured_queries) == []
    assert "about 12 workflow runs" in " ".join(response.content.decode().split())


def test_a_small_table_is_counted_exactly(operator, runs):  # noqa: F811
    response = operator.get(LIST)

    assert "12 workflow runs" in " ".join(response.content.decode().split())
    assert "about 12" not in response.content.decode()


def test_a_filter_matching_more_than_the_cap_counts_only_up_to_it_and_says_so(
    operator, runs, monkeypatch
):  # noqa: F811
    monkeypatch.setattr(paging, "COUNT_CAP", 4)

    with CaptureQueriesContext(connection) as queries:
        response = operator.get(LIST, {"workflow_name__exact": "onboarding"})

    text = " ".join(response.content.decode().split())
    assert "more than 4 workflow runs" in text
    assert counts_of_the_table(queries.captured_queries) == []
    assert "scale:10" in text  # the newest match is on the page


def test_the_workflow_filter_offers_each_workflow_and_keeps_its_old_parameter(operator, runs):  # noqa: F811
    response = operator.get(LIST, {"workflow_name__exact": "billing"})

    html = response.content.decode()
    assert "?workflow_name__exact=onboarding" in html and "?workflow_name__exact=billing" in html
    assert "scale:01" in html and "scale:00" not in html


def test_the_workflow_choices_come_from_the_index_not_a_scan_of_every_run(runs):
    from durable import selectors

    with CaptureQueriesContext(connection) as queries:
        names = selectors.run_workflow_names()

    assert names == ["billing", "onboarding"]
    assert "DISTINCT" not in queries.captured_queries[0]["sql"].upper()


def test_the_stage_filter_offers_the_stages_of_the_newest_runs(operator, runs, monkeypatch):  # noqa: F811
    from durable import selectors

    monkeypatch.setattr(selectors, "STAGES_OF_NEWEST", 1)

    assert selectors.run_stages() == ["in review"]
    monkeypatch.setattr(selectors, "STAGES_OF_NEWEST", 12)
    assert selectors.run_stages() == ["awaiting documents", "in review"]


def test_a_version_that_is_no_number_lists_nothing(operator, runs):  # noqa: F811
    response = operator.get(LIST, {"workflow_version__exact": "x"})

    assert response.status_code == 200 and "scale:" not in response.content.decode()
