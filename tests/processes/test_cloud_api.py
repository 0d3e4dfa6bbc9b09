"""The Cloud API backend against a local fake Graph API: sends, templates, media download."""
import hashlib
import re

import pytest

from durable.testing import drive
from processes.onboarding.models import Company, Document
from processes.whatsapp.backends import ProviderError, get_backend
from processes.whatsapp.models import OutboundMessage, OutboundStatus
from processes.whatsapp.services import message_send
from tests.processes.conftest import document, whatsapp_webhook

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4 contrato social da Padaria Boa Massa"


@pytest.fixture
def cloud_api(fake_http, settings):
    settings.WHATSAPP_BACKEND = "cloud_api"
    settings.WHATSAPP_API_BASE_URL = fake_http.url + "/v21.0"
    settings.WHATSAPP_ACCESS_TOKEN = "test-token"
    settings.WHATSAPP_PHONE_NUMBER_ID = "PHONE-ID"
    settings.WHATSAPP_TEMPLATE_NAME = "account_update"
    fake_http.route_sequence("POST", "/v21.0/PHONE-ID/messages",
                             lambda n: {"messaging_product": "whatsapp", "messages": [{"id": f"wamid.OUT{n}"}]})
    return fake_http


def test_inside_the_24_hour_window_a_free_text_goes_out_with_the_bearer_token(cloud_api, signed_post, clock):
    signed_post(whatsapp_webhook(document("wamid.IN", "contrato")))
    company = Company.objects.get()

    sent = message_send(company=company, body="Recebido!", idempotency_key="k-text")

    body = cloud_api.json_bodies("POST", "/v21.0/PHONE-ID/messages")[0]
    assert body["to"] == company.wa_id
    assert body["type"] == "text" and body["text"]["body"] == "Recebido!"
    assert cloud_api.requests[0]["headers"]["Authorization"] == "Bearer test-token"
    assert (sent.status, sent.provider_message_id) == (OutboundStatus.SENT, "wamid.OUT1")


def test_outside_the_window_a_template_goes_out(cloud_api, clock):
    company = Company.objects.create(wa_id="5511977776666")

    message_send(company=company, body="Sua fatura venceu", idempotency_key="k-template")

    body = cloud_api.json_bodies("POST", "/v21.0/PHONE-ID/messages")[0]
    assert body["type"] == "template"
    assert body["template"]["name"] == "account_update"
    assert body["template"]["components"][0]["parameters"][0]["text"] == "Sua fatura venceu"


def test_a_provider_error_leaves_the_message_queued_for_the_retry(cloud_api, clock):
    cloud_api.route("POST", "/v21.0/PHONE-ID/messages", {"error": {"message": "rate limit"}}, status=429)
    company = Company.objects.create(wa_id="5511977776667")

    with pytest.raises(ProviderError, match="429"):
        message_send(company=company, body="Olá", idempotency_key="k-error")

    assert OutboundMessage.objects.get(idempotency_key="k-error").status == OutboundStatus.QUEUED


def test_a_received_document_is_downloaded_as_a_step_of_the_run(cloud_api, signed_post, clock):
    digest = hashlib.sha256(PDF).hexdigest()
    cloud_api.route("GET", "/v21.0/MEDIA-1", {"url": cloud_api.url + "/files/MEDIA-1", "mime_type":
                                              "application/pdf", "sha256": digest, "file_size": len(PDF)})
    cloud_api.route("GET", "/files/MEDIA-1", PDF, content_type="application/pdf")
    signed_post(whatsapp_webhook(document("wamid.DOC", "contrato social", media_id="MEDIA-1",
                                          filename="contrato.pdf", sha256=digest)))
    company = Company.objects.get()

    drive(company.run_id)

    stored = Document.objects.get(media_id="MEDIA-1")
    assert stored.file.read() == PDF
    assert (stored.size, stored.sha256) == (len(PDF), digest)
    media_requests = [r for r in cloud_api.requests if r["method"] == "GET"]
    assert all(r["headers"]["Authorization"] == "Bearer test-token" for r in media_requests)


def test_a_customer_file_name_with_directories_is_not_where_the_file_is_stored(cloud_api, signed_post, clock):
    digest = hashlib.sha256(PDF).hexdigest()
    cloud_api.route("GET", "/v21.0/MEDIA-3", {"url": cloud_api.url + "/files/MEDIA-3", "mime_type":
                                              "application/pdf", "sha256": digest, "file_size": len(PDF)})
    cloud_api.route("GET", "/files/MEDIA-3", PDF, content_type="application/pdf")
    signed_post(whatsapp_webhook(document("wamid.DOC3", "contrato social", media_id="MEDIA-3",
                                          filename="../../etc/contrato.pdf", sha256=digest)))

    drive(Company.objects.get().run_id)

    stored = Document.objects.get(media_id="MEDIA-3")
    assert re.fullmatch(r"documents/[\d/]+/MEDIA-3(_\w+)?\.pdf", stored.file.name), stored.file.name
    assert stored.file_name == "../../etc/contrato.pdf"
    assert stored.file.read() == PDF


def test_a_download_whose_hash_does_not_match_is_refused(cloud_api, clock):
    cloud_api.route("GET", "/v21.0/MEDIA-2", {"url": cloud_api.url + "/files/MEDIA-2", "sha256": "0" * 64})
    cloud_api.route("GET", "/files/MEDIA-2", b"tampered")

    with pytest.raises(ProviderError, match="sha256 mismatch"):
        get_backend().download_media("MEDIA-2")
