"""Demo data driven through the real code paths (webhook service, engine, payments).

Idempotent: fixed message ids, invoice numbers and dedupe keys, so running it again
stores nothing new and leaves every run where it is.
"""
from datetime import timedelta
from decimal import Decimal

from durable import clock, services
from durable.errors import RunFinished
from durable.testing import drive
from processes.billing.services import invoice_issue, payment_event_receive
from processes.onboarding.models import Company
from processes.reconciliation.models import BankStatementLine, LedgerEntry
from processes.reconciliation.services import reconciliation_start
from processes.whatsapp.services import inbound_process, webhook_receive

DOCUMENTS = {
    "contract": ("document", {"filename": "contrato_social.pdf", "caption": "contrato social",
                              "mime_type": "application/pdf"}),
    "address": ("document", {"filename": "conta_de_luz.pdf", "caption": "comprovante de endereço",
                             "mime_type": "application/pdf"}),
    "selfie": ("image", {"caption": "selfie", "mime_type": "image/jpeg"}),
}
COMPANIES = [
    # (name, wa_id, what they sent, compliance decision)
    ("Padaria Boa Massa", "5511900000001", ["hello"], None),
    ("Oficina Dois Irmãos", "5511900000002", ["contract"], None),
    ("Café Aurora", "5511900000003", ["contract", "address", "selfie"], None),
    ("Mercado Sol", "5511900000004", ["contract", "address", "selfie"], {"approved": True, "by": "demo"}),
]


def whatsapp_payload(wa_id: str, name: str, wamid: str, what: str) -> dict:
    message = {"from": wa_id, "id": wamid, "timestamp": str(int(clock.now().timestamp()))}
    if what == "hello":
        message.update(type="text", text={"body": "Oi! Quero abrir uma conta PJ."})
    else:
        kind, body = DOCUMENTS[what]
        message.update(type=kind, **{kind: {"id": f"media-{wamid}", "sha256": "", **body}})
    return {"object": "whatsapp_business_account", "entry": [{"id": "DEMO", "changes": [{
        "field": "messages", "value": {
            "messaging_product": "whatsapp", "metadata": {"phone_number_id": "DEMO"},
            "contacts": [{"profile": {"name": name}, "wa_id": wa_id}], "messages": [message]}}]}]}


def receive(payload: dict) -> None:
    """What the webhook does, with the routing done now rather than at an outer commit."""
    for message_id in webhook_receive(payload).new_message_ids:
        inbound_process(message_id)


def seed_companies(out) -> None:
    for name, wa_id, sent, decision in COMPANIES:
        for what in sent:
            receive(whatsapp_payload(wa_id, name, f"wamid.DEMO.{wa_id}.{what}", what))
            run = drive(Company.objects.get(wa_id=wa_id).run_id)
        if decision:
            try:
                services.signal_send(run.id, "compliance_decision", decision,
                                     dedupe_key=f"demo:{run.id}", actor="seed_demo")
            except RunFinished:
                pass
            run = drive(run.id)
        out(f"  {name:<22} {run.id:<32} {run.status:<10} {run.waiting_for or run.result or ''}")
    sticker = whatsapp_payload("5511900000099", "Desconhecido", "wamid.DEMO.sticker", "hello")
    message = sticker["entry"][0]["changes"][0]["value"]["messages"][0]
    message.pop("text")
    message.update(type="sticker", sticker={"id": "media-sticker", "mime_type": "image/webp"})
    receive(sticker)
    out("  (and a sticker from an unknown number, kept as unsupported for an operator)")


def seed_invoices(out) -> None:
    now = clock.now()
    plans = [("NF-DEMO-001", "Padaria Boa Massa", "5511900000001", now - timedelta(hours=2), None),
             ("NF-DEMO-002", "Oficina Dois Irmãos", "5511900000002", now + timedelta(days=2), None),
             ("NF-DEMO-003", "Mercado Sol", "5511900000004", now - timedelta(days=1), "evt_demo_003")]
    for number, customer, wa_id, due_at, paid_event in plans:
        invoice = invoice_issue(number=number, customer_name=customer, amount=Decimal("350.00"),
                                due_at=due_at, wa_id=wa_id, actor="seed_demo")
        run = drive(invoice.run_id)
        if paid_event:
            payment_event_receive({"id": paid_event, "type": "payment.succeeded",
                                   "data": {"invoice": number, "amount": "350.00"}})
            run = drive(invoice.run_id)
        out(f"  {number:<22} {run.id:<32} {run.status:<10} {run.waiting_for or run.result or ''}")


def seed_reconciliation(out) -> None:
    today = clock.now().date()
    for n, amount in enumerate(["120.00", "75.50", "980.00", "15.25", "300.00"], start=1):
        entry_id = f"{today:%Y%m%d}-{n:03d}"
        BankStatementLine.objects.get_or_create(entry_id=entry_id, defaults={
            "date": today, "amount": Decimal(amount), "description": f"PIX recebido {n}"})
        if n in (1, 3):
            LedgerEntry.objects.get_or_create(entry_id=entry_id, defaults={
                "date": today, "amount": Decimal(amount), "description": f"PIX recebido {n}"})
    batch = reconciliation_start(batch_date=today, actor="seed_demo")
    run = drive(batch.run_id)
    out(f"  batch {today}         {run.id:<32} {run.status:<10} {run.waiting_for or run.result or ''}")
