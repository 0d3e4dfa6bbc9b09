"""The codec: a step's value reads the same live and replayed, typed by its annotation."""

import datetime as dt
from dataclasses import dataclass
from decimal import Decimal

import pytest

from durable import codec
from durable.errors import PayloadError


@dataclass
class Money:
    amount: Decimal
    currency: str


@dataclass
class Invoice:
    id: str
    due: dt.date
    total: Money
    lines: list[Money]
    paid_at: dt.datetime | None = None


def test_a_dataclass_round_trips_through_its_annotation():
    invoice = Invoice(
        "inv-1",
        dt.date(2026, 12, 1),
        Money(Decimal("10.50"), "BRL"),
        [Money(Decimal("10.50"), "BRL")],
    )

    assert codec.roundtrip(invoice, Invoice) == invoice


def test_without_a_hint_objects_read_as_keys_and_attributes():
    value = codec.roundtrip({"decision": {"approved": True, "by": ["ana"]}})

    assert value.decision.approved is True
    assert value["decision"]["by"] == ["ana"]


def test_optional_and_containers_follow_the_hint():
    assert codec.roundtrip([dt.date(2026, 1, 2)], list[dt.date]) == [dt.date(2026, 1, 2)]
    assert codec.roundtrip(None, Money | None) is None


def test_a_value_json_cannot_hold_is_a_clear_error():
    with pytest.raises(PayloadError, match="object"):
        codec.encode(object())


def test_data_never_chooses_the_class_it_becomes():
    value = codec.roundtrip({"__class__": "os.system", "amount": "1"})

    assert type(value) is codec.AttrDict
