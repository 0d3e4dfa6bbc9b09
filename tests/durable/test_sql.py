"""The engine's plain statements (durable/sql.py): what the ORM would have written, less Python."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable import clock, services, sql
from durable.models import AuditEvent, Signal

pytestmark = pytest.mark.django_db


def test_the_plain_insert_gives_the_row_the_primary_key_the_database_assigned():
    run = services.run_start("collect_two", id="sql:insert")
    signal = Signal(run_id=run.id, name="item", payload={"n": 1}, created_at=clock.now())

    sql.insert(signal)

    assert Signal.objects.get(pk=signal.pk).payload == {"n": 1}
    assert signal._state.adding is False


def test_the_plain_insert_refuses_a_row_that_has_a_primary_key_already():
    run = services.run_start("collect_two", id="sql:insert-pk")
    signal = Signal(pk=999, run_id=run.id, name="item", payload={}, created_at=clock.now())

    with pytest.raises(ValueError, match="primary key already"):
        sql.insert(signal)

    assert not Signal.objects.exists()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite allows no writes in a WITH")
def test_a_signal_outside_a_transaction_is_one_statement_on_postgresql():
    run = services.run_start("collect_two", id="sql:one-statement")

    with CaptureQueriesContext(connection) as statements:
        signal = services.signal_send(run.id, "item", {"n": 1}, actor="ana")

    assert len(statements) == 1
    assert AuditEvent.objects.get(run_id=run.id, action="signal").detail["signal_id"] == signal.pk
