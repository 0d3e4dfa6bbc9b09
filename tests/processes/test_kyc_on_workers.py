"""KYC checks end to end (issue 36, done-when): customers through the signed WhatsApp webhook,
their runs on a real Celery worker and beat, the registry's table given to the worker as
production gives it (the environment). PostgreSQL in CI (the integration stage)."""

import json
import subprocess
import sys
import threading

import pytest
from django.db import connection
from django.urls import reverse

from approvals.errors import ApprovalHeld
from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.services import approval_decide
from durable.models import RunStatus, WorkflowRun
from processes.onboarding.cnpj import cnpj_digits
from processes.onboarding.models import Account, Company, CompanyStatus
from processes.whatsapp.limits import LLM_QUEUE
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import document, whatsapp_message, whatsapp_webhook
from tests.support import ROOT, subprocess_env
from tests.workers import celery_processes, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the issue's end-to-end checks: PostgreSQL (in-process tests cover SQLite)",
    ),
]

APPROVED_CNPJ, CLOSED_CNPJ, NAMED_CNPJ = (
    "45.997.418/0001-53",
    "33.445.566/0001-86",
    "55.667.788/0001-86",
)
REGISTRY = {
    cnpj_digits(APPROVED_CNPJ): {"legal_name": "MERCADO SOL LTDA", "trade_name": "Mercado Sol"},
    cnpj_digits(CLOSED_CNPJ): {"legal_name": "CONSTRUTORA HORIZONTE LTDA", "status": "BAIXADA"},
    cnpj_digits(NAMED_CNPJ): {"legal_name": "FLORICULTURA JARDIM LTDA"},
}
WORKER_ENV = {
    "ONBOARDING_DOCUMENTS_QUIET_SECONDS": "1",
    "ONBOARDING_CNPJ_WAIT_SECONDS": "2",
    "DURABLE_LEASE_SECONDS": "5",
    "DURABLE_DISPATCH_GRACE_SECONDS": "1",
    "DURABLE_SWEEP_INTERVAL_SECONDS": "0.5",
    "ONBOARDING_FAKE_REGISTRY": json.dumps(REGISTRY),
}


@pytest.fixture
def on_workers(settings, tmp_path):
    """Start a worker, the document checker's worker and beat; this process posts the webhooks
    and decides as reviewers do, with the same registry table."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 1
    settings.ONBOARDING_FAKE_REGISTRY = REGISTRY

    def start(log_dir):
        log_dir.mkdir(parents=True, exist_ok=True)
        processes = celery_processes(log_dir, **WORKER_ENV)
        celery = processes.__enter__()
        celery.start_worker()
        celery.start_worker("llm", concurrency=1, queues=[LLM_QUEUE])
        celery.start_beat()
        return processes

    return start


def says(phone: str, text: str, n: int) -> dict:
    return whatsapp_message(f"wamid.{phone}.T{n}", wa_id=phone, text=text)


def documents(phone: str, round_: str = "") -> list[dict]:
    return [
        document(
            f"wamid.{phone}.C{round_}", "Contrato social", filename="contrato.pdf", wa_id=phone
        ),
        document(
            f"wamid.{phone}.A{round_}", "comprovante de endereço", filename="luz.pdf", wa_id=phone
        ),
        document(f"wamid.{phone}.S{round_}", "", type="image", wa_id=phone),
    ]


def open_case_of(phone: str, timeout: float = 90) -> ApprovalRequest:
    def case():
        company = Company.objects.filter(wa_id=phone).first()
        return (
            company
            and ApprovalRequest.objects.filter(run_id=company.run_id, status="pending").first()
        )

    wait_until(case, timeout=timeout, message=f"a case open for {phone}")
    return case()


def manage(*args: str) -> subprocess.CompletedProcess:
    """``manage.py`` as an operator or an auditor runs it, against the test database."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def in_thread(work):
    """A thread's work, its own database connection closed after (or the test database stays
    busy)."""

    def run():
        try:
            work()
        finally:
            connection.close()

    return run


def routed_to(case) -> list[str]:
    return sorted(case.candidate_groups.values_list("name", flat=True))


def test_each_kyc_check_routes_or_holds_its_case_on_a_worker_and_a_decided_case_has_a_valid_pack(
    on_workers, tmp_path, signed_post, ana, bruno, client
):
    processes = on_workers(tmp_path)
    try:
        post = lambda *messages: signed_post(whatsapp_webhook(*messages)).status_code  # noqa: E731
        assert (
            post(says("5511930000001", f"Oi, CNPJ {APPROVED_CNPJ}", 1), *documents("5511930000001"))
            == 200
        )
        approval_decide(open_case_of("5511930000001").pk, actor=ana, outcome="approve")
        wait_until(lambda: Account.objects.exists(), timeout=60, message="the first account")

        assert post(says("5511930000002", f"Oi, CNPJ {APPROVED_CNPJ}", 1)) == 200  # the same CNPJ
        assert post(says("5511930000003", f"Oi, CNPJ {CLOSED_CNPJ}", 1)) == 200  # closed (BAIXADA)
        assert post(says("5511930000004", f"Oi, CNPJ {NAMED_CNPJ}", 1)) == 200
        assert (
            post(says("5511930000004", "Razão social: Joana Silva Transportes", 2)) == 200
        )  # not the registry's
        assert (
            post(says("5511930000005", "Oi, quero abrir uma conta PJ", 1)) == 200
        )  # never gives a CNPJ
        for phone in ("5511930000002", "5511930000003", "5511930000004", "5511930000005"):
            assert post(*documents(phone)) == 200
        duplicate, closed, mismatch, no_cnpj = (
            open_case_of(f"551193000000{n}") for n in (2, 3, 4, 5)
        )
    finally:
        processes.__exit__(None, None, None)

    approved = ApprovalRequest.objects.get(status=ApprovalStatus.APPROVED)
    first = Company.objects.get(wa_id="5511930000001")
    assert (
        f"the CNPJ is already held by Padaria Boa Massa (customer {first.customer_id}, approved, "
        f"case #{approved.pk})" in duplicate.summary["risk"]
    )
    assert "the CNPJ registry lists the company as BAIXADA, not ATIVA" in closed.summary["risk"]
    assert (
        "the legal name the customer gave (Joana Silva Transportes) does not match the registry's "
        "(FLORICULTURA JARDIM LTDA)"
    ) in mismatch.summary["risk"]
    assert "no valid CNPJ given" in no_cnpj.summary["risk"]
    for case in (duplicate, closed, mismatch, no_cnpj):
        assert (case.risk, case.required_approvals, routed_to(case)) == ("high", 2, ["kyc-senior"])
    assert OutboundMessage.objects.filter(
        company__wa_id="5511930000005", body__contains="razão social"
    ).exists()

    with pytest.raises(ApprovalHeld, match="no valid CNPJ"):
        approval_decide(no_cnpj.pk, actor=ana, outcome="approve")
    client.force_login(ana)
    page = client.get(reverse("approval_case", args=[no_cnpj.pk])).content.decode()
    assert 'value="approve" class="primary" disabled' in page and "no valid CNPJ" in page
    assert not Account.objects.filter(company__wa_id="5511930000005").exists()

    pack = tmp_path / "evidence.zip"
    exported = manage("approvals", "evidence", "export", str(approved.pk), "-o", str(pack))
    assert exported.returncode == 0, exported.stderr
    verified = manage("approvals", "evidence", "verify", str(pack), "--against-database")
    assert verified.returncode == 0 and "verified" in verified.stdout, (
        verified.stdout + verified.stderr
    )
    content = bytearray(pack.read_bytes())
    content[len(content) // 2] ^= 0x01  # one changed byte
    pack.write_bytes(bytes(content))
    assert manage("approvals", "evidence", "verify", str(pack)).returncode == 1


def test_an_approval_the_withdrawal_overtakes_is_superseded_and_writing_again_starts_anew(
    on_workers, tmp_path, signed_post, ana
):
    phone = "5511930000011"
    post = lambda *messages: signed_post(whatsapp_webhook(*messages)).status_code  # noqa: E731
    processes = on_workers(tmp_path / "first")
    try:
        assert post(says(phone, f"Oi, CNPJ {NAMED_CNPJ}", 1), *documents(phone)) == 200
        case = open_case_of(phone)
    finally:
        processes.__exit__(None, None, None)  # the run sleeps: both arrive before it wakes

    company = Company.objects.get(wa_id=phone)
    first_run = company.run_id
    racing = [
        threading.Thread(
            target=in_thread(lambda: approval_decide(case.pk, actor=ana, outcome="approve"))
        ),
        threading.Thread(target=in_thread(lambda: post(says(phone, "cancelar", 2)))),
    ]
    for thread in racing:
        thread.start()
    for thread in racing:
        thread.join()

    processes = on_workers(tmp_path / "second")
    try:
        wait_until(
            lambda: WorkflowRun.objects.get(pk=first_run).is_finished,
            timeout=60,
            message="the run ends",
        )
        case.refresh_from_db()
        company.refresh_from_db()
        assert WorkflowRun.objects.get(pk=first_run).status == RunStatus.CANCELLED
        assert (case.status, company.status) == (ApprovalStatus.SUPERSEDED, CompanyStatus.WITHDRAWN)
        assert not Account.objects.exists()
        assert OutboundMessage.objects.filter(idempotency_key=f"{first_run}:bye").count() == 1

        assert post(says(phone, "Oi de novo, quero abrir a conta", 3)) == 200
        second = open_case_of(phone)  # the documents on file count: a new case, in a new run
    finally:
        processes.__exit__(None, None, None)

    company.refresh_from_db()
    assert (company.application, company.run_id, second.run_id) == (
        2,
        f"{first_run}:2",
        f"{first_run}:2",
    )
    assert second.pk != case.pk
