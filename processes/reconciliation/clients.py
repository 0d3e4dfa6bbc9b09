"""The bank and the ledger behind small interfaces; the defaults live in our database.

``FakeBank`` reads statement lines from a table (fed by fixtures or the demo), so the
process runs without a bank. A real client implements the same two methods.
"""

from dataclasses import dataclass
from datetime import date
from decimal import Decimal
from typing import Protocol

from django.utils.module_loading import import_string

from processes import conf
from processes.reconciliation.models import BankStatementLine, LedgerEntry


@dataclass
class Line:
    id: str
    amount: Decimal
    description: str = ""


class BankClient(Protocol):
    def statement(self, day: date) -> list[Line]: ...


class LedgerClient(Protocol):
    def entries(self, day: date) -> list[Line]: ...

    def post(self, day: date, line: Line, *, idempotency_key: str) -> str:
        """Post a correction; posting the same entry id twice must not post twice."""


class FakeBank:
    def statement(self, day: date) -> list[Line]:
        return [
            Line(id=row.entry_id, amount=row.amount, description=row.description)
            for row in BankStatementLine.objects.filter(date=day)
        ]


class DatabaseLedger:
    """Our ledger table: a post inside an atomic step commits with the journal entry."""

    def entries(self, day: date) -> list[Line]:
        return [
            Line(id=row.entry_id, amount=row.amount, description=row.description)
            for row in LedgerEntry.objects.filter(date=day)
        ]

    def post(self, day: date, line: Line, *, idempotency_key: str) -> str:
        entry, _ = LedgerEntry.objects.get_or_create(
            entry_id=line.id,
            defaults={
                "date": day,
                "amount": line.amount,
                "description": f"correction: {line.description}"[:200],
                "is_correction": True,
                "idempotency_key": idempotency_key,
            },
        )
        return entry.entry_id


def bank() -> BankClient:
    return import_string(
        conf.setting("RECONCILIATION_BANK_CLIENT", "processes.reconciliation.clients.FakeBank")
    )()


def ledger() -> LedgerClient:
    return import_string(
        conf.setting(
            "RECONCILIATION_LEDGER_CLIENT", "processes.reconciliation.clients.DatabaseLedger"
        )
    )()
