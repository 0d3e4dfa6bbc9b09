"""Fixtures for the processes: signed webhook posts, WhatsApp payloads, a fake HTTP server."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from rest_framework.test import APIClient

from durable.testing import drive
from processes import signing
from processes.onboarding.models import Company

WHATSAPP_URL = "/api/webhooks/whatsapp/"
PAYMENTS_URL = "/api/webhooks/payments/"


def whatsapp_message(
    wamid: str,
    *,
    wa_id: str | None = "5511999990001",
    user_id: str | None = None,
    type: str = "text",
    **body,
) -> dict:
    message = {"id": wamid, "timestamp": "1767225600", "type": type}
    if wa_id:
        message["from"] = wa_id
    if user_id:
        message["from_user_id"] = user_id
    if type == "text":
        message["text"] = {"body": body.get("text", "Oi, quero abrir uma conta PJ")}
    elif type in ("document", "image"):
        message[type] = {
            "id": body.get("media_id", f"media-{wamid}"),
            "mime_type": body.get(
                "mime_type", "application/pdf" if type == "document" else "image/jpeg"
            ),
            "sha256": body.get("sha256", "abc123"),
            "caption": body.get("caption", ""),
        }
        if type == "document":
            message[type]["filename"] = body.get("filename", "documento.pdf")
    else:
        message[type] = body or {}
    return message


def whatsapp_webhook(
    *messages: dict, statuses: list | None = None, contacts: list | None = None
) -> dict:
    if contacts is None:
        contacts = [
            {
                "profile": {"name": "Padaria Boa Massa"},
                "wa_id": m["from"],
                **({"user_id": m["from_user_id"]} if m.get("from_user_id") else {}),
            }
            for m in messages
            if m.get("from")
        ]
    value = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": "551130000000", "phone_number_id": "PHONE-ID"},
        "contacts": contacts,
        "messages": list(messages),
    }
    if statuses:
        value["statuses"] = statuses
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "WABA-ID", "changes": [{"field": "messages", "value": value}]}],
    }


def document(wamid: str, caption: str, **options) -> dict:
    kind = options.pop("type", "document")
    return whatsapp_message(wamid, type=kind, caption=caption, **options)


@pytest.fixture
def api_client():
    return APIClient()


@pytest.fixture
def signed_post(api_client, settings, django_capture_on_commit_callbacks):
    """POST a body to a webhook with a correct signature; on-commit work runs as in production."""

    def post(payload, *, url=WHATSAPP_URL, secret=None, header="HTTP_X_HUB_SIGNATURE_256"):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        if secret is None:
            secret = (
                settings.WHATSAPP_APP_SECRET
                if url == WHATSAPP_URL
                else settings.PAYMENTS_WEBHOOK_SECRET
            )
        if url == PAYMENTS_URL and header == "HTTP_X_HUB_SIGNATURE_256":
            header = "HTTP_X_SIGNATURE_256"
        with django_capture_on_commit_callbacks(execute=True):
            return api_client.post(
                url,
                data=body,
                content_type="application/json",
                **{header: signing.sign(body, secret)},
            )

    return post


class FakeHTTPServer:
    """A real HTTP server on 127.0.0.1 that answers from a routing table and records requests."""

    def __init__(self):
        self.routes: dict[tuple[str, str], tuple[int, bytes, str]] = {}
        self.requests: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": body,
                    }
                )
                answer = fake.routes.get(
                    (self.command, self.path), (404, b'{"error": "no route"}', "application/json")
                )
                status, content, content_type, *extra = answer() if callable(answer) else answer
                self.send_response(status)
                headers = dict(extra[0]) if extra else {}
                self.send_header("Content-Type", content_type)
                if not headers.pop("X-Fake-Without-Length", None):  # else: the body ends at close
                    self.send_header("Content-Length", str(len(content)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                try:
                    self.wfile.write(content)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a refused download)

            do_GET = do_POST = _answer

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    def route(
        self,
        method: str,
        path: str,
        body,
        *,
        status: int = 200,
        content_type: str = "application/json",
        headers: dict | None = None,
    ) -> None:
        content = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.routes[(method, path)] = (status, content, content_type, headers or {})

    def redirect(self, path: str, location: str, *, status: int = 302) -> None:
        self.route(
            "GET",
            path,
            b"",
            status=status,
            content_type="text/plain",
            headers={"Location": location},
        )

    def paths(self, method: str = "GET") -> list[str]:
        return [r["path"] for r in self.requests if r["method"] == method]

    def route_sequence(self, method: str, path: str, make_body) -> None:
        """Answer the n-th request with ``make_body(n)`` (n from 1), e.g. distinct message ids."""
        count = iter(range(1, 1_000_000))
        self.routes[(method, path)] = lambda: (
            200,
            json.dumps(make_body(next(count))).encode(),
            "application/json",
        )

    def json_bodies(self, method: str, path: str) -> list:
        return [
            json.loads(r["body"])
            for r in self.requests
            if r["method"] == method and r["path"] == path
        ]


@pytest.fixture
def fake_http():
    server = FakeHTTPServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


@pytest.fixture
def cloud_api(fake_http, settings):
    """The Cloud API backend, talking to the fake Graph API on 127.0.0.1."""
    settings.WHATSAPP_BACKEND = "cloud_api"
    settings.WHATSAPP_API_BASE_URL = fake_http.url + "/v21.0"
    settings.WHATSAPP_ACCESS_TOKEN = "test-token"
    settings.WHATSAPP_PHONE_NUMBER_ID = "PHONE-ID"
    # The fake Graph API speaks plain http on 127.0.0.1: allowed here explicitly, never in
    # production.
    settings.WHATSAPP_MEDIA_SCHEMES = ["http"]
    settings.WHATSAPP_MEDIA_HOSTS = [
        f"127.0.0.1:{fake_http.server.server_port}"
    ]  # its port, listed
    fake_http.route_sequence(
        "POST",
        "/v21.0/PHONE-ID/messages",
        lambda n: {"messaging_product": "whatsapp", "messages": [{"id": f"wamid.OUT{n}"}]},
    )
    return fake_http


REVIEWER_PASSWORD = "correct-horse-battery"


def make_reviewer(username: str, *, reviewer: bool = True):
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    from approvals.services import compliance_group_ensure
    from processes.onboarding.workflow import KYC_GROUP, KYC_SENIOR_GROUP

    user = get_user_model().objects.create_user(username=username, password=REVIEWER_PASSWORD)
    if reviewer:
        # A senior reviewer: onboarding routes every case, low or high risk, to kyc-senior too.
        user.groups.add(
            compliance_group_ensure(),
            Group.objects.get_or_create(name=KYC_SENIOR_GROUP)[0],
            Group.objects.get_or_create(name=KYC_GROUP)[0],
        )
    return user


@pytest.fixture
def ana(db):
    """A compliance reviewer."""
    return make_reviewer("ana")


@pytest.fixture
def bruno(db):
    """A second compliance reviewer (four eyes)."""
    return make_reviewer("bruno")


@pytest.fixture
def sofia(db):
    """A compliance supervisor (not a reviewer)."""
    from django.contrib.auth.models import Group

    from approvals.services import SUPERVISOR_GROUP

    user = make_reviewer("sofia", reviewer=False)
    user.groups.add(Group.objects.get_or_create(name=SUPERVISOR_GROUP)[0])
    return user


# --- one onboarding customer, played through the signed webhook ---

PHONE = "5511988887777"
CNPJ = "11.222.333/0001-81"
HELLO = whatsapp_message(
    "wamid.HELLO", wa_id=PHONE, text=f"Oi, quero abrir uma conta PJ. CNPJ {CNPJ}"
)
CONTRACT = document("wamid.CONTRACT", "Contrato social", filename="contrato.pdf", wa_id=PHONE)
ADDRESS = document("wamid.ADDRESS", "comprovante de endereço", filename="luz.pdf", wa_id=PHONE)
SELFIE = document("wamid.SELFIE", "", type="image", wa_id=PHONE)
NEW_CONTRACT = document(
    "wamid.CONTRACT2", "Contrato social atualizado", filename="contrato-2024.pdf", wa_id=PHONE
)


QUIET = 30  # ONBOARDING_DOCUMENTS_QUIET_SECONDS: a round of documents closes after it


@pytest.fixture
def customer(signed_post, clock):
    """Plays the customer: each call is one delivery through the signed webhook (one message,
    or several sent together); then the quiet period passes and the run advances."""

    def send(*messages):
        assert signed_post(whatsapp_webhook(*messages)).status_code == 200
        run_id = Company.objects.get(wa_id=PHONE).run_id
        drive(run_id)
        clock.advance(QUIET + 1)
        run = drive(run_id)
        clock.advance(1)  # the customer reads the answer before writing again
        return run

    return send


@pytest.fixture
def in_review(customer):
    """A company with a CNPJ and its three documents, waiting for compliance."""
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    return run


def issued_invoice(number: str, due_at, *, wa_id: str = "5511955554444"):
    """An invoice issued through billing's service, its reminders' run driven to its first wait."""
    from decimal import Decimal

    from durable.testing import drive
    from processes.billing.services import invoice_issue

    invoice = invoice_issue(
        number=number,
        customer_name="Padaria Boa Massa",
        amount=Decimal("350.00"),
        due_at=due_at,
        wa_id=wa_id,
        actor="test",
    )
    drive(invoice.run_id)
    return invoice


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    """Every message a process test makes the processes send is one docs/processes.md lists
    ("What customers read, as sent"), problems included: the list cannot fall behind the code;
    and it is Portuguese throughout (no catalog string left in English, no English word)."""
    outcome = yield
    if outcome.excinfo is not None or item.get_closest_marker("django_db") is None:
        return
    from processes.whatsapp.models import OutboundMessage
    from tests.languages import strings_of_the_other_language
    from tests.processes.customer_messages import PROCESS_KEYS, undocumented

    sent = [
        (key, body)
        for key, body in OutboundMessage.objects.values_list("idempotency_key", "body")
        if key.startswith(PROCESS_KEYS)
    ]
    missing = [(key, text) for key, body in sent for text in undocumented(body)]
    english = [
        (body, found) for _, body in sent if (found := strings_of_the_other_language(body, "pt-br"))
    ]
    if missing:
        outcome.force_exception(
            AssertionError(f"sent to a customer but not in docs/processes.md's list: {missing}")
        )
    elif english:
        outcome.force_exception(AssertionError(f"English sent to a Portuguese customer: {english}"))
