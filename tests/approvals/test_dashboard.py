"""The supervisor dashboard and the queue's sorting and filters: figures on the page and in
/metrics."""

import re
from datetime import date, timedelta

import pytest
from django.db import connection, transaction
from django.urls import reverse
from django.utils import translation
from prometheus_client.parser import text_string_to_metric_families

from approvals import figures, selectors, services
from durable import days
from tests.approvals.conftest import start_routed_case
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db

TOKEN = "approvals-scrape-secret"
HOUR = timedelta(hours=1)


@pytest.fixture
def scrape(client, settings):
    settings.DURABLE_METRICS_TOKEN = TOKEN

    def get() -> dict:
        response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return get


@pytest.fixture
def decided_week(clock, junior, senior):
    """Three cases decided on one Wednesday, after 2 h, 4 h and 10 h."""
    start = clock.now()
    clock.advance(timedelta(days=(2 - start.weekday()) % 7 + 7))  # next week's Wednesday
    opened = clock.now()
    cases = [start_routed_case(f"c{hours}", groups=("kyc",)) for hours in (2, 4, 10)]
    for hours, case in zip((2, 4, 10), cases):
        clock.advance(opened + hours * HOUR - clock.now())
        services.approval_decide(case.pk, actor=junior, outcome="approve")
    return opened


def test_the_weekly_time_to_decision_gives_the_nearest_rank_p50_and_p90(decided_week):
    week = figures.weekly_time_to_decision()[-1]

    assert (week.decided, week.p50, week.p90) == (3, 4 * 3600, 10 * 3600)


def test_the_backlog_counts_open_cases_by_group_and_age(clock):
    start_routed_case("old", groups=("kyc",))
    clock.advance(days(2))
    start_routed_case("new", groups=("kyc", "kyc-senior"))

    rows = {row.group: row.counts for row in figures.backlog()}

    assert rows == {"kyc": [1, 0, 1, 0], "kyc-senior": [1, 0, 0, 0]}


def test_an_age_on_a_buckets_bound_is_counted_in_the_older_bucket(clock):
    for name in ("a", "b", "c", "d"):
        start_routed_case(name, groups=("kyc",))
        clock.advance(HOUR)  # opened 4, 3, 2 and 1 h before the count
    clock.advance(timedelta(hours=20))  # and now 24, 23, 22, 21 h

    (row,) = figures.backlog()

    assert row.counts == [0, 3, 1, 0]


def test_a_case_routed_to_no_group_is_in_the_backlog_of_any_reviewer(clock, settings):
    settings.APPROVALS_SLA_HOURS = 24
    start_routed_case("anyone", groups=())
    clock.advance(days(4))
    start_routed_case("kyc", groups=("kyc",))

    rows = {row.group: (row.counts, row.past_sla) for row in figures.backlog()}

    assert rows == {figures.ANY_GROUP: ([0, 0, 0, 1], 1), "kyc": ([1, 0, 0, 0], 0)}


def test_a_case_open_longer_than_the_sla_is_past_sla(clock, settings):
    settings.APPROVALS_SLA_HOURS = 24
    late = start_routed_case("late", groups=("kyc",))
    clock.advance(days(1))
    start_routed_case("fresh", groups=("kyc",))

    assert figures.past_sla() == [late]


def test_decisions_are_tallied_per_reviewer_and_outcome(decided_week):
    tallies = figures.decisions_per_reviewer()

    assert [(t.reviewer, t.by_outcome["approve"], t.total) for t in tallies] == [("joana", 3, 3)]


def test_metrics_carry_the_dashboard_figures(decided_week, scrape, clock):
    start_routed_case("waiting", groups=("kyc-senior",))

    metrics = scrape()

    monday = (decided_week - timedelta(days=decided_week.weekday())).date().isoformat()
    assert metrics[("approvals_backlog", (("age", "lt_4h"), ("group", "kyc-senior")))] == 1
    assert metrics[("approvals_decisions_total", (("outcome", "approve"),))] == 3
    assert (
        metrics[("approvals_time_to_decision_seconds", (("quantile", "0.9"), ("week", monday)))]
        == 36000
    )
    assert metrics[("approvals_claims_stale", ())] == 0


def test_metrics_name_no_reviewer_by_default(decided_week, scrape):
    metrics = scrape()

    labelled = [labels for (name, labels) in metrics if name == "approvals_decisions_total"]
    assert labelled and all(dict(labels).keys() == {"outcome"} for labels in labelled)
    assert not any("joana" in str(key) for key in metrics)


def test_metrics_count_each_reviewers_votes_by_name_when_the_deployment_asks(
    decided_week, scrape, settings
):
    settings.APPROVALS_METRICS_REVIEWER_NAMES = True

    metrics = scrape()

    assert (
        metrics[("approvals_decisions_total", (("outcome", "approve"), ("reviewer", "joana")))] == 3
    )


def test_the_dashboard_shows_a_supervisor_the_figures_and_an_svg_chart(decided_week, supervisor):
    page = signed_in(supervisor).get(reverse("approval_dashboard")).content.decode()

    assert '<svg class="chart"' in page and '<rect class="p90"' in page
    assert 'data-reviewer="joana"' in page and "10.0 h" in page


NUMERIC = ("x", "y", "width", "height", "x1", "x2", "y1", "y2", "cx", "cy", "r")


@pytest.mark.parametrize("language", ["pt-br", "en"])
def test_every_number_of_the_dashboard_chart_parses_as_a_number_in_every_language(
    decided_week, supervisor, settings, language
):
    """A browser draws nothing from y="192,0": the chart's coordinates are never localized."""
    import xml.etree.ElementTree as ElementTree

    settings.LANGUAGE_CODE = language
    page = signed_in(supervisor).get(reverse("approval_dashboard")).content.decode()

    chart = ElementTree.fromstring(re.search(r'<svg class="chart".*?</svg>', page, re.S).group(0))
    numbers = [
        value
        for element in chart.iter()
        for name, value in element.attrib.items()
        if name in NUMERIC
    ]
    numbers += chart.attrib["viewBox"].split()
    assert len(numbers) > 20 and all(
        re.fullmatch(r"-?\d+(\.\d+)?", number) for number in numbers
    ), numbers


@pytest.mark.parametrize(
    "language, shown", [("pt-br", ["12/10", "19/10"]), ("en", ["10/12", "10/19"])]
)
def test_the_charts_weeks_are_labelled_as_the_reader_writes_a_date(language, shown):
    weeks = [
        figures.Week(date(2026, 10, 12), 0, None, None),
        figures.Week(date(2026, 10, 19), 1, 3600.0, 3600.0),
    ]

    with translation.override(language):
        labels = [label["text"] for label in figures.chart(weeks)["labels"]]

    assert labels == shown


# --- the queue's ergonomics ---


def test_the_queue_sorted_by_risk_puts_high_risk_first(senior, clock):
    low = start_routed_case("low", risk="low", groups=("kyc-senior",))
    high = start_routed_case("high", risk="high", groups=("kyc-senior",))

    assert list(selectors.approvals_open_for(senior, sort="risk")) == [high, low]


def test_the_queue_sorted_by_age_puts_the_oldest_first_whatever_its_deadline(
    senior, supervisor, clock
):
    old = start_routed_case("old", groups=("kyc-senior",))
    clock.advance(HOUR)
    new = start_routed_case("new", groups=("kyc-senior",))
    services.approval_extend_deadline(
        old.pk, actor=supervisor, due_at=old.due_at + days(5), reason="customer abroad"
    )

    assert (
        list(selectors.approvals_open_for(senior, sort="age")),
        list(selectors.approvals_open_for(senior, sort="deadline")),
    ) == ([old, new], [new, old])


def test_the_queue_filters_by_assignee_me_and_nobody(junior, clock):
    mine = start_routed_case("mine", groups=("kyc",))
    free = start_routed_case("free", groups=("kyc",))
    services.approval_claim(mine.pk, actor=junior)

    assert (
        list(selectors.approvals_open_for(junior, assignee="me")),
        list(selectors.approvals_open_for(junior, assignee="none")),
    ) == ([mine], [free])


def test_the_queue_filters_by_group(senior, clock):
    start_routed_case("both", groups=("kyc", "kyc-senior"))
    only = start_routed_case("only", groups=("kyc-senior",))

    listed = list(selectors.approvals_open_for(senior, group="kyc-senior"))
    narrowed = list(selectors.approvals_open_for(senior, group="kyc"))

    assert len(listed) == 2 and only not in narrowed and len(narrowed) == 1


def test_the_queue_page_keeps_its_sort_and_filters_in_the_form(junior, clock):
    start_routed_case("one", groups=("kyc",))

    page = (
        signed_in(junior)
        .get(reverse("approval_queue"), {"sort": "age", "assignee": "none"})
        .content.decode()
    )

    assert '<option value="age" selected>' in page and '<option value="none" selected>' in page


def test_the_case_page_offers_the_keyboard_shortcuts_help(junior, clock):
    case = start_routed_case("keys", groups=("kyc",))

    page = signed_in(junior).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert 'id="shortcuts-help"' in page and "shortcuts.js" in page


SVG_NUMBERS = re.compile(r'\b(x|y|x1|x2|y1|y2|width|height|viewBox)="([^"]*)"')


@pytest.mark.parametrize("language", ["en", "pt-br"])
def test_the_charts_coordinates_are_numbers_a_browser_reads_in_every_language(
    decided_week, supervisor, settings, language
):
    settings.LANGUAGE_CODE = language  # the supervisor chose none: the project's language
    page = signed_in(supervisor).get(reverse("approval_dashboard")).content.decode()
    chart = re.search(r'<svg class="chart".*?</svg>', page, re.S).group(0)

    values = SVG_NUMBERS.findall(chart)
    assert len(values) > 10
    assert [
        (name, value)
        for name, value in values
        if not re.fullmatch(r"-?\d+(\.\d+)?( -?\d+(\.\d+)?)*", value)
    ] == []


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the partial index is PostgreSQL's")
def test_the_queues_first_page_reads_the_index_of_open_cases_only(senior):
    """With 200,000 decided cases the queue read past every one of them in the deadline
    index (107 ms); its page must read the partial index over the open ones."""
    page = selectors.approvals_open_for(senior, every_group=True)[:50]

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a plan that cannot read them all
        plan = page.explain()

    assert "approvals_open_queue" in plan, plan
