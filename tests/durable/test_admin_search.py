"""The run lists' search: a part of a run's id or of its attributes finds it, every word must
match, a wildcard is a character; on PostgreSQL a trigram index serves it (with a million runs
an unindexed search read them all: benchmarks/pages.py)."""

import pytest
from django.db import connection, transaction
from django.urls import reverse

from durable.models import ArchivedRun, WorkflowRun
from durable.surfaces.admin.search import like_pattern, matching, words
from tests.durable.test_admin import operator  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db
LIST = reverse("admin:durable_workflowrun_changelist")


@pytest.fixture
def runs(clock):
    now = clock.now()
    WorkflowRun.objects.bulk_create(
        [
            WorkflowRun(
                id=run_id,
                workflow_name="onboarding",
                input={},
                attributes=attributes,
                created_at=now,
                updated_at=now,
            )
            for run_id, attributes in [
                ("kyc:c-17", {"company": "Padaria Boa Massa", "cnpj": "11222333000181"}),
                ("kyc:c-18", {"company": "Massa Fina Ltda", "discount": "100%"}),
                ("kyc:c-19", {"company": "Boa Vista_Comércio"}),
            ]
        ]
    )


def found(operator, term: str) -> set[str]:  # noqa: F811
    page = operator.get(LIST, {"q": term}).content.decode()
    return {run for run in ("c-17", "c-18", "c-19") if f"kyc:{run}" in page}


def test_a_part_of_a_run_id_finds_it(operator, runs):  # noqa: F811
    assert found(operator, "c-18") == {"c-18"}


def test_an_attribute_value_finds_its_run_whatever_the_case(operator, runs):  # noqa: F811
    assert found(operator, "11222333000181") == {"c-17"}
    assert found(operator, "padaria") == {"c-17"}


def test_every_word_must_match_somewhere_and_a_quoted_phrase_is_one_word(operator, runs):  # noqa: F811
    assert found(operator, "massa boa") == {"c-17"}
    assert found(operator, "massa") == {"c-17", "c-18"}
    assert found(operator, '"boa massa"') == {"c-17"}


def test_a_percent_or_an_underscore_in_a_search_is_that_character(operator, runs):  # noqa: F811
    assert found(operator, "100%") == {"c-18"}
    assert found(operator, "vista_") == {"c-19"}
    assert found(operator, "a%a") == set()


def test_words_and_patterns_are_those_of_the_admin():
    assert words(' boa  "massa fina" ') == ["boa", "massa fina"]
    assert like_pattern("50%_a\\b") == "%50\\%\\_a\\\\b%"


on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the trigram index is PostgreSQL's (pg_trgm)"
)


@on_postgresql
@pytest.mark.parametrize(
    ("model", "index"),
    [(WorkflowRun, "durable_run_search"), (ArchivedRun, "durable_archived_search")],
)
def test_on_postgresql_the_search_is_served_by_its_trigram_index(model, index):
    """The search's expression must be the index's, word for word: a plan that cannot read every
    row (sequential scans off) uses the index only if the two agree."""
    searched = model.objects.filter(matching(model, "11222333 padaria")).order_by().values("id")

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = searched.explain()

    assert f"Bitmap Index Scan on {index}" in plan, plan
