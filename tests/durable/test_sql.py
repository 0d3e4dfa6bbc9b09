"""The engine's generic statements (durable/sql.py): what the ORM would have written, less
Python."""

import pytest

from durable import clock, services, sql
from durable.models import Signal

pytestmark = pytest.mark.django_db


def test_the_plain_insert_gives_the_row_the_primary_key_the_database_assigned():
    run = services.run_start("collect_two", id="sql:insert", actor="test")
    signal = Signal(run_id=run.id, name="item", payload={"n": 1}, created_at=clock.now())

    sql.insert(signal)

    assert Signal.objects.get(pk=signal.pk).payload == {"n": 1}
    assert signal._state.adding is False


def test_the_plain_insert_refuses_a_row_that_has_a_primary_key_already():
    run = services.run_start("collect_two", id="sql:insert-pk", actor="test")
    signal = Signal(pk=999, run_id=run.id, name="item", payload={}, created_at=clock.now())

    with pytest.raises(ValueError, match="primary key already"):
        sql.insert(signal)

    assert not Signal.objects.exists()
