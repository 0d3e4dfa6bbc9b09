"""Record the business processes' histories into tests/histories/, on purpose.

    .venv/bin/python -m tests.histories.record                    # every scenario
    .venv/bin/python -m tests.histories.record onboarding-rejected  # some, by file name
    .venv/bin/python -m tests.histories.record --list

Each scenario drives a real run through the services the webhooks and the reviewer UI
use (WhatsApp messages, payment events, a reviewer's decision), with the fake clock, in a
throwaway SQLite database of its own (under a temporary DURABLE_VAR_DIR; your database is
never touched). The run is then exported by durable's export (``history_export``, what
``manage.py durable export`` writes) to ``<name>.json`` beside this file. Run ids, times
and row ids are fixed, so recording unchanged code again writes the same files.

A history is a fixture of the past (docs/versioning.md): re-record a file only when no
run of its shape can still be in flight; to protect a new path, add a scenario.
tests/processes/test_history_recorder.py runs every scenario, so this file cannot rot.
"""

import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

HERE = Path(__file__).resolve().parent
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)  # a Monday morning, in every scenario


@dataclass
class Scenario:
    name: str  # the file name, <workflow>-<what it shows>
    play: Callable[[object], str]  # play(clock) -> the run id
    status: str  # where the run ends
    result: object = None  # its result, when it matters


# --- onboarding: a customer over WhatsApp, a reviewer in the approvals app ---


def _customer(customer_id: str, wa_id: str, name: str):
    """The company, created as the first message would, but with a fixed customer id."""
    from processes.onboarding.models import Company

    company, _ = Company.objects.get_or_create(
        customer_id=customer_id, defaults={"wa_id": wa_id, "name": name}
    )
    return company


QUIET = timedelta(seconds=31)  # past ONBOARDING_DOCUMENTS_QUIET_SECONDS: a batch closes


def _send(
    clock, company, *what: str, cnpj: str = "", again: str = "", together: bool = False
) -> str:
    """The customer sends messages (demo payloads: hello, contract, address, selfie), one
    delivery each with the quiet period after it, or ``together`` in one go."""
    from durable.testing import drive
    from processes.demo import receive, whatsapp_payload

    for item in what:
        wamid = f"wamid.{company.customer_id}.{item}{again}"
        receive(whatsapp_payload(company.wa_id, company.name, wamid, item, cnpj))
        drive(company.run_id)
        if not together:
            clock.advance(QUIET)
    clock.advance(QUIET)
    return drive(company.run_id).id


def _reviewer(username: str):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from approvals.services import compliance_group_ensure

    user, _ = get_user_model().objects.get_or_create(username=username)
    user.groups.add(compliance_group_ensure(), Group.objects.get_or_create(name="kyc-senior")[0])
    return user


def _decide(run_id: str, username: str, outcome: str, reason: str = ""):
    from approvals.models import OPEN_STATUSES, ApprovalRequest
    from approvals.services import approval_decide
    from durable.testing import drive

    case = ApprovalRequest.objects.get(run_id=run_id, status__in=OPEN_STATUSES)
    approval_decide(case.pk, actor=_reviewer(username), outcome=outcome, reason=reason)
    return drive(run_id)


def _advance(clock, run_id: str, delta: timedelta):
    from durable.testing import drive

    clock.advance(delta)
    return drive(run_id)


CNPJ = "11.222.333/0001-81"


def onboarding_approved_after_missing_documents(clock) -> str:
    company = _customer("c-hist-approved", "5511910000001", "Padaria Boa Massa")
    run_id = _send(clock, company, "hello", "contract", cnpj=CNPJ)
    clock.advance(timedelta(days=2))
    run_id = _send(clock, company, "address", "selfie")  # asked twice, then complete
    return _decide(run_id, "ana", "approve").id


def onboarding_rejected(clock) -> str:
    company = _customer("c-hist-rejected", "5511910000002", "Oficina Dois Irmãos")
    run_id = _send(clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ)
    return _decide(run_id, "ana", "reject", "CNPJ inapto na Receita Federal").id


def onboarding_more_documents(clock) -> str:
    company = _customer("c-hist-more", "5511910000003", "Café Aurora")
    run_id = _send(clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ)
    _decide(run_id, "ana", "more_documents", "Envie o contrato social com a última alteração")
    clock.advance(timedelta(days=1))
    _send(clock, company, "contract", again="-2")  # back in review: a new case
    return _decide(run_id, "bruno", "approve").id


def onboarding_escalated_then_approved(clock) -> str:
    """No CNPJ: high risk, four eyes; nobody decides for six days (two escalations)."""
    company = _customer("c-hist-escalated", "5511910000004", "Transportes Veloz")
    run_id = _send(clock, company, "hello", "contract", "address", "selfie")
    _advance(clock, run_id, timedelta(days=3))
    _advance(clock, run_id, timedelta(days=3))
    _override_cnpj_hold(run_id)  # no account without a CNPJ unless a supervisor says why
    _decide(run_id, "ana", "approve")
    return _decide(run_id, "bruno", "approve").id


def _override_cnpj_hold(run_id: str) -> None:
    """A supervisor lifts the no-CNPJ hold on the run's open case (outside the run: its
    journal is what it was before the hold existed)."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from approvals.models import OPEN_STATUSES, ApprovalRequest
    from approvals.services import SUPERVISOR_GROUP, approval_hold_override

    supervisor, _ = get_user_model().objects.get_or_create(username="sofia")
    supervisor.groups.add(Group.objects.get_or_create(name=SUPERVISOR_GROUP)[0])
    case = ApprovalRequest.objects.get(run_id=run_id, status__in=OPEN_STATUSES)
    approval_hold_override(case.pk, actor=supervisor, reason="CNPJ confirmed by phone")


def onboarding_expired(clock) -> str:
    """Greeted, never sends a document: a reminder at 7 days, closed 3 days later."""
    company = _customer("c-hist-expired", "5511910000005", "Mercado Sol")
    run_id = _send(clock, company, "hello", cnpj=CNPJ)
    _advance(clock, run_id, timedelta(days=7))
    return _advance(clock, run_id, timedelta(days=3)).id


def onboarding_deadline_extended_then_approved(clock) -> str:
    """A supervisor moves the case's deadline two days later; past the old one the case is
    still open (the wait re-read the due date), and a reviewer approves it."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from approvals.models import OPEN_STATUSES, ApprovalRequest
    from approvals.services import SUPERVISOR_GROUP, approval_extend_deadline
    from durable.testing import drive

    company = _customer("c-hist-extended", "5511910000012", "Gráfica Tinta Viva")
    run_id = _send(clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ)
    supervisor, _ = get_user_model().objects.get_or_create(username="sofia")
    supervisor.groups.add(Group.objects.get_or_create(name=SUPERVISOR_GROUP)[0])
    case = ApprovalRequest.objects.get(run_id=run_id, status__in=OPEN_STATUSES)
    approval_extend_deadline(
        case.pk,
        actor=supervisor,
        due_at=case.due_at + timedelta(days=2),
        reason="the customer's bank letter is late",
    )
    drive(run_id)
    _advance(clock, run_id, timedelta(days=3, hours=1))  # past the old deadline
    return _decide(run_id, "ana", "approve").id


def onboarding_waiting_for_compliance(clock) -> str:
    """In flight: the case is open, the run waits for the reviewer."""
    company = _customer("c-hist-waiting", "5511910000006", "Livraria Página")
    return _send(clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ)


def onboarding_batch_asked_once(clock) -> str:
    """Two documents in one batch: one validation, one ask (the selfie); then the selfie."""
    company = _customer("c-hist-batch", "5511910000007", "Floricultura Ipê")
    _send(clock, company, "hello", cnpj=CNPJ)
    _send(clock, company, "contract", "address", together=True)
    return _send(clock, company, "selfie")


def onboarding_batch_more_documents(clock) -> str:
    """A document sent during the review is drained before the reviewer's request; the
    answer to it opens the second case, approved."""
    company = _customer("c-hist-batch-more", "5511910000008", "Ótica Visão")
    run_id = _send(
        clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ, together=True
    )
    _send(clock, company, "contract", again="-early")
    _decide(run_id, "ana", "more_documents", "Envie o contrato social com a última alteração")
    _send(clock, company, "contract", again="-2")
    return _decide(run_id, "ana", "approve").id


def onboarding_batch_approved(clock) -> str:
    """The whole set in one batch: each document fetched, one validation, the customer told
    the case is under review, approved."""
    company = _customer("c-hist-batch-approved", "5511910000009", "Papelaria Lápis")
    run_id = _send(
        clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ, together=True
    )
    return _decide(run_id, "ana", "approve").id


def onboarding_withdrawn_in_review(clock) -> str:
    """The customer writes "cancelar" while the case is open: a graceful cancel, one goodbye."""
    from durable.testing import drive
    from processes.onboarding.services import onboarding_withdraw

    company = _customer("c-hist-withdrawn", "5511910000010", "Bazar Central")
    run_id = _send(
        clock, company, "hello", "contract", "address", "selfie", cnpj=CNPJ, together=True
    )
    onboarding_withdraw(company, message_id=f"wamid.{company.customer_id}.cancelar")
    return drive(run_id).id


def onboarding_asked_for_cnpj(clock) -> str:
    """No CNPJ when the set is complete: asked once; the answer makes the case low risk."""
    company = _customer("c-hist-cnpj", "5511910000011", "Sorveteria Polar")
    _send(clock, company, "hello", "contract", "address", "selfie", together=True)
    run_id = _send(clock, company, "hello", cnpj=CNPJ, again="-cnpj")
    return _decide(run_id, "ana", "approve").id


# --- billing ---


def _invoice(number: str, wa_id: str):
    from durable.testing import drive
    from processes.billing.services import invoice_issue

    invoice = invoice_issue(
        number=number,
        customer_name="Padaria Boa Massa",
        amount=Decimal("350.00"),
        due_at=START - timedelta(hours=1),
        wa_id=wa_id,
        actor="record",
    )
    drive(invoice.run_id)
    return invoice


def billing_paid_early(clock) -> str:
    from durable.testing import drive
    from processes.billing.services import payment_event_receive

    invoice = _invoice("NF-HIST-001", "5511920000001")
    clock.advance(timedelta(days=1))
    payment_event_receive(
        {
            "id": "evt_hist_001",
            "type": "payment.succeeded",
            "data": {"invoice": invoice.number, "amount": "350.00"},
        }
    )
    return drive(invoice.run_id).id


def billing_unpaid_ticket(clock) -> str:
    invoice = _invoice("NF-HIST-002", "5511920000002")
    _advance(clock, invoice.run_id, timedelta(days=3))
    return _advance(clock, invoice.run_id, timedelta(days=3)).id


def _signalled(invoice, name: str, payload: dict, dedupe_key: str, **row) -> None:
    """How void and due-date change reached a run before they were updates: the row written,
    then a signal (these histories keep that shape; runs of it may still be in flight)."""
    from durable import services
    from processes.billing.models import Invoice

    Invoice.objects.filter(pk=invoice.pk).update(**row)
    services.signal_send(invoice.run_id, name, payload, dedupe_key=dedupe_key, actor="record")


def billing_renegotiated_then_voided(clock) -> str:
    """Reminded once; a new due date restarts the schedule (one reminder from it); voided.
    Sent as signals, as before updates."""
    from durable.testing import drive

    invoice = _invoice("NF-HIST-003", "5511920000003")
    due_at = START + timedelta(days=5)
    _signalled(
        invoice,
        "due_date_changed",
        {"due_at": due_at.isoformat()},
        f"due:{invoice.pk}:{due_at.isoformat()}",
        due_at=due_at,
    )
    drive(invoice.run_id)
    _advance(clock, invoice.run_id, timedelta(days=5))
    _signalled(invoice, "voided", {"reason": "issued twice"}, f"void:{invoice.pk}", status="voided")
    return drive(invoice.run_id).id


def billing_void_raced_by_payment(clock) -> str:
    """Voided and paid before the run woke: payment wins, recorded once (signals, as before
    updates)."""
    from durable.testing import drive
    from processes.billing.services import payment_event_receive

    invoice = _invoice("NF-HIST-004", "5511920000004")
    _signalled(invoice, "voided", {"reason": ""}, f"void:{invoice.pk}", status="voided")
    payment_event_receive(
        {
            "id": "evt_hist_004",
            "type": "payment.succeeded",
            "data": {"invoice": invoice.number, "amount": "350.00"},
        }
    )
    return drive(invoice.run_id).id


def billing_renegotiated_then_voided_by_updates(clock) -> str:
    """The same, as updates: each handler decides under the invoice's lock while the run
    waits, and hands the wait its signal in the same transaction."""
    from durable.testing import drive
    from processes.billing.services import invoice_due_date_change, invoice_void

    invoice = _invoice("NF-HIST-005", "5511920000005")
    invoice_due_date_change(invoice, due_at=START + timedelta(days=5), actor="record", timeout=0)
    drive(invoice.run_id)
    _advance(clock, invoice.run_id, timedelta(days=5))
    invoice_void(invoice, actor="record", reason="issued twice", timeout=0)
    return drive(invoice.run_id).id


def billing_void_update_refused_after_payment(clock) -> str:
    """A void stored, then a payment, before the run woke: the handler finds the invoice paid
    and refuses; the run ends paid."""
    from durable.testing import drive
    from processes.billing.services import invoice_void, payment_event_receive

    invoice = _invoice("NF-HIST-006", "5511920000006")
    invoice_void(invoice, actor="record", timeout=0)
    payment_event_receive(
        {
            "id": "evt_hist_006",
            "type": "payment.succeeded",
            "data": {"invoice": invoice.number, "amount": "350.00"},
        }
    )
    return drive(invoice.run_id).id


# --- reconciliation ---


def reconcile_completed(clock) -> str:
    """A day's batch: three of five bank lines missing from the ledger; it sleeps until the
    closing window (06:00 the next day), then closes."""
    from durable.testing import drive
    from processes.reconciliation.models import BankStatementLine, LedgerEntry
    from processes.reconciliation.services import reconciliation_start

    day = START.date()
    for n, amount in enumerate(["120.00", "75.50", "980.00", "15.25", "300.00"], start=1):
        BankStatementLine.objects.create(
            entry_id=f"hist-{n}", date=day, amount=Decimal(amount), description=f"PIX recebido {n}"
        )
        if n in (1, 3):
            LedgerEntry.objects.create(entry_id=f"hist-{n}", date=day, amount=Decimal(amount))
    from durable.models import WorkflowRun

    batch = reconciliation_start(batch_date=day, actor="record")
    drive(batch.run_id)
    for child_id in (
        WorkflowRun.objects.filter(parent_id=batch.run_id)
        .order_by("id")
        .values_list("id", flat=True)
    ):
        drive(child_id)  # each correction is a child run
    drive(batch.run_id)
    return _advance(clock, batch.run_id, timedelta(hours=21)).id


def reconcile_scheduled(clock) -> str:
    """The durable schedule starts the day before's batch (the run opens its own batch, behind
    patched('opens-its-batch')); two corrections, the sleep until the closing window, reconciled."""
    from durable.models.schedules import Schedule
    from durable.tasks import tick
    from durable.testing import drive
    from processes.reconciliation.models import BankStatementLine, LedgerEntry

    day = START.date() - timedelta(days=1)
    for n, amount in enumerate(["42.00", "18.90", "7.35"], start=1):
        BankStatementLine.objects.create(
            entry_id=f"sched-{n}", date=day, amount=Decimal(amount), description=f"PIX recebido {n}"
        )
        if n == 2:
            LedgerEntry.objects.create(entry_id=f"sched-{n}", date=day, amount=Decimal(amount))
    # The schedule the processes migration seeded, as if its 00:30 today were still due.
    Schedule.objects.filter(name="reconcile-daily").update(
        next_fire_at=datetime.combine(START.date(), datetime.min.time(), tzinfo=UTC)
        + timedelta(minutes=30)
    )
    tick()
    run_id = f"reconcile:{day.isoformat()}"
    drive(run_id)
    from durable.models import WorkflowRun

    for child_id in (
        WorkflowRun.objects.filter(parent_id=run_id).order_by("id").values_list("id", flat=True)
    ):
        drive(child_id)  # each correction is a child run
    drive(run_id)
    return _advance(clock, run_id, timedelta(hours=21)).id


SCENARIOS = [
    Scenario(
        "onboarding-approved-after-missing-documents",
        onboarding_approved_after_missing_documents,
        "completed",
    ),
    Scenario("onboarding-rejected", onboarding_rejected, "completed", "rejected"),
    Scenario("onboarding-more-documents", onboarding_more_documents, "completed"),
    Scenario("onboarding-escalated-then-approved", onboarding_escalated_then_approved, "completed"),
    Scenario("onboarding-expired", onboarding_expired, "completed", "expired"),
    Scenario(
        "onboarding-deadline-extended-then-approved",
        onboarding_deadline_extended_then_approved,
        "completed",
    ),
    Scenario("onboarding-waiting-for-compliance", onboarding_waiting_for_compliance, "waiting"),
    Scenario("onboarding-batch-asked-once", onboarding_batch_asked_once, "waiting"),
    Scenario("onboarding-batch-more-documents", onboarding_batch_more_documents, "completed"),
    Scenario("onboarding-batch-approved", onboarding_batch_approved, "completed"),
    Scenario("onboarding-withdrawn-in-review", onboarding_withdrawn_in_review, "cancelled"),
    Scenario("onboarding-asked-for-cnpj", onboarding_asked_for_cnpj, "completed"),
    Scenario("billing-paid-early", billing_paid_early, "completed", "paid"),
    Scenario("billing-unpaid-ticket", billing_unpaid_ticket, "completed", "escalated"),
    Scenario(
        "billing-renegotiated-then-voided", billing_renegotiated_then_voided, "completed", "voided"
    ),
    Scenario("billing-void-raced-by-payment", billing_void_raced_by_payment, "completed", "paid"),
    Scenario(
        "billing-renegotiated-then-voided-by-updates",
        billing_renegotiated_then_voided_by_updates,
        "completed",
        "voided",
    ),
    Scenario(
        "billing-void-update-refused-after-payment",
        billing_void_update_refused_after_payment,
        "completed",
        "paid",
    ),
    Scenario("reconcile-completed", reconcile_completed, "completed"),
    Scenario("reconcile-scheduled", reconcile_scheduled, "completed"),
]


def play(scenario: Scenario) -> str:
    """Run one scenario from START on the fake clock and check where it ended; return the
    run id. Needs a database (the recorder's own, or a test's)."""
    from durable.models import WorkflowRun
    from durable.testing import fake_clock

    with fake_clock(START) as clock:
        run_id = scenario.play(clock)
    run = WorkflowRun.objects.get(pk=run_id)
    if run.status != scenario.status or (
        scenario.result is not None and run.result != scenario.result
    ):
        raise AssertionError(
            f"scenario {scenario.name} ended {run.status} with {run.result!r}, "
            f"not {scenario.status} with {scenario.result!r}: {run.error or ''}"
        )
    return run_id


def document_of(run_id: str) -> str:
    from durable.features.history import history_export

    return json.dumps(history_export(run_id), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    if "--list" in argv:
        print("\n".join(scenario.name for scenario in SCENARIOS))
        return 0
    wanted = [scenario for scenario in SCENARIOS if not argv or scenario.name in argv]
    unknown = set(argv) - {scenario.name for scenario in SCENARIOS}
    if unknown:
        print(f"unknown scenario(s): {', '.join(sorted(unknown))} (see --list)", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="durable-histories-"))
    os.environ.pop("DATABASE_URL", None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        DURABLE_VAR_DIR=str(workdir),
        DURABLE_DISPATCHER="none",
        WHATSAPP_BACKEND="console",
        DOCUMENT_CHECKER="rules",
    )
    sys.path.insert(0, str(HERE.parent.parent))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connections

    try:
        call_command("migrate", verbosity=0)
        connections.close_all()
        database = workdir / "db.sqlite3"
        shutil.copy(database, workdir / "migrated.sqlite3")
        for scenario in wanted:
            shutil.copy(workdir / "migrated.sqlite3", database)  # a fresh database: fixed row ids
            run_id = play(scenario)
            path = HERE / f"{scenario.name}.json"
            path.write_text(document_of(run_id), encoding="utf-8")
            connections.close_all()
            print(f"wrote {path.relative_to(HERE.parent.parent)} ({run_id})")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
