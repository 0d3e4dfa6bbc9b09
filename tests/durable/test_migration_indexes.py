"""Indexes a migration builds CONCURRENTLY on PostgreSQL (durable 0022, 0023, processes
0021): a build that failed half-way leaves an invalid index, which the next run of the
migration builds again rather than keeping it because its name exists; a migration through
the helper goes forward and back on every database."""

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import connection, models
from django.test.utils import CaptureQueriesContext

from durable.migrations._concurrently import add_index, create_index_concurrently

pytestmark = pytest.mark.django_db(transaction=True)  # CONCURRENTLY: outside any transaction
postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="CREATE INDEX CONCURRENTLY is PostgreSQL's"
)
DEFINITION = "ON durable_workflowrun (updated_at)"
PROBE = models.Index(fields=["updated_at"], name="durable_probe_index")


def valid(name: str) -> bool | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
    return row[0] if row else None


def left_invalid(name: str) -> None:
    """What a build interrupted half-way leaves."""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE INDEX {name} {DEFINITION}")
        cursor.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass(%s)", [name]
        )


def indexes_of(table: str) -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, table))


@pytest.fixture
def probe():
    yield PROBE.name
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX IF EXISTS {PROBE.name}")


@postgresql_only
def test_an_index_left_invalid_by_a_failed_build_is_built_again(probe):
    left_invalid(probe)

    with connection.schema_editor(atomic=False) as editor:
        create_index_concurrently(editor, probe, DEFINITION)

    assert valid(probe) is True


@postgresql_only
def test_a_valid_index_is_left_as_it_is_and_a_missing_one_is_built(probe):
    with connection.schema_editor(atomic=False) as editor:
        create_index_concurrently(editor, probe, DEFINITION)
        create_index_concurrently(editor, probe, DEFINITION)

    assert valid(probe) is True


@postgresql_only
def test_a_models_index_left_invalid_is_built_again_and_a_valid_one_kept(probe):
    left_invalid(probe)

    with connection.schema_editor(atomic=False) as editor:
        add_index(apps, editor, "durable", "WorkflowRun", PROBE)
        add_index(apps, editor, "durable", "WorkflowRun", PROBE)  # a second run of it

    assert valid(probe) is True


def test_a_migration_through_the_helper_goes_back_and_forward_again():
    # processes 0021, the latest of its app: back to 0020, then forward, as a deploy would
    try:
        with CaptureQueriesContext(connection) as back:
            call_command("migrate", "processes", "0020", verbosity=0)
        dropped = indexes_of("processes_company")
    finally:
        with CaptureQueriesContext(connection) as forward:
            call_command("migrate", "processes", verbosity=0)

    assert "company_created_at" not in dropped
    assert "company_created_at" in indexes_of("processes_company")
    if connection.vendor == "postgresql":
        assert valid("company_created_at") is True
        sql = [q["sql"] for q in back.captured_queries + forward.captured_queries]
        assert any("DROP INDEX CONCURRENTLY" in s and "company_created_at" in s for s in sql)
        assert any("CREATE INDEX CONCURRENTLY" in s and "company_created_at" in s for s in sql)
