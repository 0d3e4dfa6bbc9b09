"""Indexes a migration builds CONCURRENTLY on PostgreSQL (durable 0022, 0023, processes
0021): a build that failed half-way leaves an invalid index, which the next run of the
migration builds again rather than keeping it because its name exists."""

import pytest
from django.db import connection

from durable.migrations._concurrently import create_index_concurrently

pytestmark = [
    pytest.mark.django_db(transaction=True),  # CONCURRENTLY: outside any transaction
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="CREATE INDEX CONCURRENTLY is PostgreSQL's"
    ),
]
DEFINITION = "ON durable_workflowrun (updated_at)"


def valid(name: str) -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
    return row[0] if row else None


@pytest.fixture
def probe():
    yield "durable_probe_index"
    with connection.cursor() as cursor:
        cursor.execute("DROP INDEX IF EXISTS durable_probe_index")


def test_an_index_left_invalid_by_a_failed_build_is_built_again(probe):
    with connection.cursor() as cursor:  # what a build interrupted half-way leaves
        cursor.execute(f"CREATE INDEX {probe} {DEFINITION}")
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", [probe]
        )

    with connection.schema_editor(atomic=False) as editor:
        create_index_concurrently(editor, probe, DEFINITION)

    assert valid(probe) is True


def test_a_valid_index_is_left_as_it_is_and_a_missing_one_is_built(probe):
    with connection.schema_editor(atomic=False) as editor:
        create_index_concurrently(editor, probe, DEFINITION)
        create_index_concurrently(editor, probe, DEFINITION)

    assert valid(probe) is True


def test_a_migration_through_the_helper_leaves_its_index_built_and_valid():
    # processes 0021 (add_index_concurrently), as every test database migrated it
    assert valid("company_created_at") is True
