#!/usr/bin/env python3
"""Seed finished runs of each process through the real code paths, then print their sizes.

  DATABASE_URL=postgres://postgres@127.0.0.1:5432/sizes DEBUG=1 \\
      .venv/bin/python scripts/measure_run_sizes.py --runs 2000

Onboarding: a customer writes on WhatsApp with a CNPJ, sends the three documents, a
reviewer approves. Billing: an invoice is issued, a reminder goes out, the payment arrives.
Reconciliation: a day's statement with matched and unmatched lines. Each run is driven in
this process until it completes (no worker needed). Use an empty database: the figures are
``durable sizes`` over every finished run in it (the figures in docs/operations.md came
from this script).
"""

import argparse
import os
import sys
from datetime import date, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test.utils import override_settings  # noqa: E402

from approvals.models import OPEN_STATUSES, ApprovalRequest  # noqa: E402
from approvals.services import approval_decide, compliance_group_ensure  # noqa: E402
from durable import clock  # noqa: E402
from durable.testing import drive  # noqa: E402
from processes import demo  # noqa: E402
from processes.billing.services import invoice_issue, payment_event_receive  # noqa: E402
from processes.onboarding.cnpj import WEIGHTS_1, WEIGHTS_2, _check_digit, cnpj_format  # noqa: E402
from processes.onboarding.models import Company  # noqa: E402
from processes.reconciliation.models import BankStatementLine, LedgerEntry  # noqa: E402
from processes.reconciliation.services import reconciliation_start  # noqa: E402


def cnpj(n: int) -> str:
    base = f"{10_000_000 + n:08d}0001"
    first = _check_digit(base, WEIGHTS_1)
    return cnpj_format(base + first + _check_digit(base + first, WEIGHTS_2))


def reviewer():
    user, _ = get_user_model().objects.get_or_create(username="sizes-reviewer")
    user.groups.add(compliance_group_ensure())
    return user


@override_settings(ONBOARDING_DOCUMENTS_QUIET_SECONDS=0, ONBOARDING_CNPJ_WAIT_SECONDS=0)
def onboarding(n: int, by) -> str:
    wa_id = f"55119{n:08d}"
    for what in demo.ALL_THREE:
        demo.receive(
            demo.whatsapp_payload(
                wa_id, f"Empresa {n}", f"wamid.SIZES.{wa_id}.{what}", what, cnpj(n)
            )
        )
        run_id = Company.objects.get(wa_id=wa_id).run_id
        drive(run_id)
    for case in ApprovalRequest.objects.filter(run_id=run_id, status__in=OPEN_STATUSES):
        approval_decide(case.pk, actor=by, outcome="approve", reason="sizes: documents in order")
    return drive(run_id).status


def billing(n: int) -> str:
    number = f"NF-SIZES-{n:06d}"
    invoice = invoice_issue(
        number=number,
        customer_name=f"Empresa {n}",
        amount=Decimal("350.00"),
        due_at=clock.now() - timedelta(hours=2),
        wa_id=f"55119{n:08d}",
        actor="sizes",
    )
    drive(invoice.run_id)
    payment_event_receive(
        {
            "id": f"evt_sizes_{n}",
            "type": "payment.succeeded",
            "data": {"invoice": number, "amount": "350.00"},
        }
    )
    return drive(invoice.run_id).status


def reconciliation(n: int) -> str:
    day = date(2020, 1, 1) + timedelta(days=n)
    for line, amount in enumerate(["120.00", "75.50", "980.00", "15.25", "300.00"], start=1):
        entry_id = f"{day:%Y%m%d}-{line:03d}"
        BankStatementLine.objects.get_or_create(
            entry_id=entry_id,
            defaults={
                "date": day,
                "amount": Decimal(amount),
                "description": f"PIX recebido {line}",
            },
        )
        LedgerEntry.objects.get_or_create(
            entry_id=entry_id,
            defaults={
                "date": day,
                "amount": Decimal(amount),
                "description": f"PIX recebido {line}",
            },
        )
    batch = reconciliation_start(batch_date=day, actor="sizes")
    return drive(batch.run_id).status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=1000, help="finished runs per process (default 1000)"
    )
    options = parser.parse_args()
    if connection.vendor != "postgresql":
        print("set DATABASE_URL to an empty PostgreSQL database", file=sys.stderr)
        return 2
    call_command("migrate", verbosity=0)
    by = reviewer()
    for name, make in [
        ("onboarding", lambda n: onboarding(n, by)),
        ("billing", billing),
        ("reconciliation", reconciliation),
    ]:
        statuses: dict[str, int] = {}
        for n in range(options.runs):
            status = make(n)
            statuses[status] = statuses.get(status, 0) + 1
        print(f"{name}: {statuses}", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")  # Django runs it outside a transaction (autocommit)
    call_command("durable", "sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
