"""Demo data driven through the real code paths (webhook service, engine, payments).

Idempotent: fixed message ids, invoice numbers and dedupe keys, so running it again
stores nothing new and leaves every run where it is.
"""

import hashlib
import time
from datetime import timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.test.utils import override_settings

from approvals.models import OPEN_STATUSES, ApprovalRequest
from approvals.services import COMPLIANCE_GROUP, approval_decide
from durable import clock
from durable.selectors import runs_started_by
from durable.testing import drive
from processes.billing.services import invoice_issue, payment_event_receive
from processes.onboarding.models import Company
from processes.reconciliation.models import BankStatementLine, LedgerEntry
from processes.reconciliation.services import reconciliation_start
from processes.whatsapp.samples import sample_pdf, sample_png
from processes.whatsapp.services import inbound_process, webhook_receive

DOCUMENTS = {
    "contract": (
        "document",
        {
            "filename": "contrato_social.pdf",
            "caption": "contrato social",
            "mime_type": "application/pdf",
        },
    ),
    "address": (
        "document",
        {
            "filename": "conta_de_luz.pdf",
            "caption": "comprovante de endereço",
            "mime_type": "application/pdf",
        },
    ),
    "selfie": ("image", {"caption": "selfie", "mime_type": "image/png"}),
    # A selfie sent as a PDF: the validator refuses it (a problem finding: high risk).
    "selfie_pdf": (
        "document",
        {"filename": "selfie.pdf", "caption": "selfie", "mime_type": "application/pdf"},
    ),
}
ALL_THREE = ["hello", "contract", "address", "selfie"]
COMPANIES = [
    # (name, wa_id, CNPJ written in the first message, what they sent, a reviewer approves)
    ("Padaria Boa Massa", "5511900000001", "12.345.678/0001-95", ["hello"], False),
    ("Oficina Dois Irmãos", "5511900000002", "98.765.432/0001-98", ["hello", "contract"], False),
    ("Café Aurora", "5511900000003", "11.222.333/0001-81", ALL_THREE, False),
    (
        "Transportes Veloz",
        "5511900000006",
        "",
        ["hello", "contract", "address", "selfie_pdf", "selfie"],
        False,
    ),
    ("Mercado Sol", "5511900000004", "45.997.418/0001-53", ALL_THREE, True),
    # The CNPJ Mercado Sol's account was opened with: high risk, naming Mercado Sol and its case.
    ("Sol Comércio", "5511900000007", "45.997.418/0001-53", ALL_THREE, False),
    # A company the registry lists as closed (BAIXADA): high risk.
    ("Construtora Horizonte", "5511900000008", "33.445.566/0001-86", ALL_THREE, False),
]
# What the demo's fake CNPJ registry answers (processes/onboarding/registry.py).
DEMO_REGISTRY = {
    "12345678000195": {
        "legal_name": "PADARIA BOA MASSA LTDA",
        "trade_name": "Boa Massa",
        "opened_on": "2015-03-02",
        "main_activity": "Fabricação de produtos de panificação",
    },
    "98765432000198": {
        "legal_name": "OFICINA DOIS IRMAOS LTDA",
        "opened_on": "2009-08-17",
        "main_activity": "Serviços de manutenção e reparação mecânica de veículos",
    },
    "11222333000181": {
        "legal_name": "CAFE AURORA LTDA",
        "trade_name": "Café Aurora",
        "opened_on": "2019-05-10",
        "main_activity": "Lanchonetes, casas de chá, de sucos e similares",
    },
    "45997418000153": {
        "legal_name": "MERCADO SOL LTDA",
        "trade_name": "Mercado Sol",
        "opened_on": "2012-01-23",
        "main_activity": "Comércio varejista de mercadorias em geral",
    },
    "33445566000186": {
        "legal_name": "CONSTRUTORA HORIZONTE LTDA",
        "status": "BAIXADA",
        "opened_on": "2004-06-01",
        "main_activity": "Construção de edifícios",
    },
}
DEMO_REVIEWER = "ana"  # created by seed_approvals_demo, which scripts/run runs first


def whatsapp_payload(wa_id: str, name: str, wamid: str, what: str, cnpj: str = "") -> dict:
    message = {"from": wa_id, "id": wamid, "timestamp": str(int(clock.now().timestamp()))}
    if what == "hello":
        text = "Oi! Quero abrir uma conta PJ." + (f" Nosso CNPJ é {cnpj}." if cnpj else "")
        message.update(type="text", text={"body": text})
    else:
        kind, body = DOCUMENTS[what]
        message.update(type=kind, **{kind: {"id": f"media-{wamid}", "sha256": "", **body}})
    return {
        "object": "whatsapp_business_account",
        "entry": [
            {
                "id": "DEMO",
                "changes": [
                    {
                        "field": "messages",
                        "value": {
                            "messaging_product": "whatsapp",
                            "metadata": {"phone_number_id": "DEMO"},
                            "contacts": [{"profile": {"name": name}, "wa_id": wa_id}],
                            "messages": [message],
                        },
                    }
                ],
            }
        ],
    }


def receive(payload: dict) -> None:
    """What the webhook does, with the routing done now rather than at an outer commit."""
    for message_id in webhook_receive(payload).new_message_ids:
        inbound_process(message_id)


def attach_sample_files(company: Company) -> None:
    """Give the company's documents a file to preview; WhatsApp's media would go here."""
    for document in company.documents.filter(file=""):
        content = (
            sample_png()
            if document.mime_type == "image/png"
            else sample_pdf(f"{document.get_kind_display()} - {company.name}")
        )
        document.file.save(
            document.file_name or f"{document.kind}.png", ContentFile(content), save=False
        )
        document.size, document.sha256 = len(content), hashlib.sha256(content).hexdigest()
        document.save(update_fields=["file", "size", "sha256"])


def approve_as_demo_reviewer(run_id: str, out) -> None:
    """Decide the run's open case as the demo reviewer, through the reviewer UI's service."""
    reviewer = (
        get_user_model()
        .objects.filter(username=DEMO_REVIEWER, groups__name=COMPLIANCE_GROUP)
        .first()
    )
    case = ApprovalRequest.objects.filter(run_id=run_id, status__in=OPEN_STATUSES).first()
    if case is None:
        return
    if reviewer is None:
        out(
            f"  (no reviewer {DEMO_REVIEWER!r}: run "
            f"seed_approvals_demo first; case #{case.pk} stays open)"
        )
        return
    approval_decide(
        case.pk, actor=reviewer, outcome="approve", reason="demonstração: documentos em ordem"
    )


def drive_past_limits(run_id: str):
    """Drive a run; one that waits its turn to send (WhatsApp's rate, 20 a second: the demo
    sends faster) is driven again once the second has passed."""
    run = drive(run_id)
    for _ in range(5):
        if not (run.waiting_for or "").startswith("limit:"):
            break
        time.sleep(1.05)
        run = drive(run_id)
    return run


@override_settings(
    ONBOARDING_DOCUMENTS_QUIET_SECONDS=0,
    ONBOARDING_CNPJ_WAIT_SECONDS=0,
    ONBOARDING_FAKE_REGISTRY=DEMO_REGISTRY,
)
def seed_companies(out) -> None:
    """Scripted customers: each message is its own batch, and one without a CNPJ is asked
    for it but not waited for (no quiet period or CNPJ wait to sit out)."""
    for name, wa_id, cnpj, sent, approve in COMPANIES:
        for what in sent:
            receive(whatsapp_payload(wa_id, name, f"wamid.DEMO.{wa_id}.{what}", what, cnpj))
            company = Company.objects.get(wa_id=wa_id)
            attach_sample_files(company)
            run = drive_past_limits(company.run_id)
        if approve:
            approve_as_demo_reviewer(run.id, out)
            run = drive_past_limits(run.id)
        out(f"  {name:<22} {run.id:<32} {run.status:<10} {run.waiting_for or run.result or ''}")
    sticker = whatsapp_payload("5511900000099", "Desconhecido", "wamid.DEMO.sticker", "hello")
    message = sticker["entry"][0]["changes"][0]["value"]["messages"][0]
    message.pop("text")
    message.update(type="sticker", sticker={"id": "media-sticker", "mime_type": "image/webp"})
    receive(sticker)
    out(
        "  (and a sticker from an unknown number: kept as "
        "unsupported for an operator, its onboarding started)"
    )


def seed_invoices(out) -> None:
    now = clock.now()
    plans = [
        ("NF-DEMO-001", "Padaria Boa Massa", "5511900000001", now - timedelta(hours=2), None),
        ("NF-DEMO-002", "Oficina Dois Irmãos", "5511900000002", now + timedelta(days=2), None),
        ("NF-DEMO-003", "Mercado Sol", "5511900000004", now - timedelta(days=1), "evt_demo_003"),
    ]
    for number, customer, wa_id, due_at, paid_event in plans:
        invoice = invoice_issue(
            number=number,
            customer_name=customer,
            amount=Decimal("350.00"),
            due_at=due_at,
            wa_id=wa_id,
            actor="seed_demo",
        )
        run = drive(invoice.run_id)
        if paid_event:
            payment_event_receive(
                {
                    "id": paid_event,
                    "type": "payment.succeeded",
                    "data": {"invoice": number, "amount": "350.00"},
                }
            )
            run = drive(invoice.run_id)
        out(f"  {number:<22} {run.id:<32} {run.status:<10} {run.waiting_for or run.result or ''}")


def seed_reconciliation(out) -> None:
    today = clock.now().date()
    for n, amount in enumerate(["120.00", "75.50", "980.00", "15.25", "300.00"], start=1):
        entry_id = f"{today:%Y%m%d}-{n:03d}"
        BankStatementLine.objects.get_or_create(
            entry_id=entry_id,
            defaults={"date": today, "amount": Decimal(amount), "description": f"PIX recebido {n}"},
        )
        if n in (1, 3):
            LedgerEntry.objects.get_or_create(
                entry_id=entry_id,
                defaults={
                    "date": today,
                    "amount": Decimal(amount),
                    "description": f"PIX recebido {n}",
                },
            )
    batch = reconciliation_start(batch_date=today, actor="seed_demo")
    drive(batch.run_id)
    for child in runs_started_by(batch.run_id):
        drive(child.id)  # each correction is a child run
    run = drive(batch.run_id)
    out(
        f"  batch {today}         {run.id:<32} {run.status:<10} "
        f"{run.waiting_for or run.result or ''}"
    )
