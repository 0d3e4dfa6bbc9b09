"""The Cloud API backend against a local fake Graph API: sends, templates, media download."""

import hashlib
import re

import pytest

from durable.testing import drive
from processes.onboarding.media import media_download
from processes.onboarding.models import Company, Document
from processes.whatsapp.backends import MediaRefused, MediaTooLarge, ProviderError, get_backend
from processes.whatsapp.models import OutboundMessage, OutboundStatus
from processes.whatsapp.services import message_send
from tests.processes.conftest import QUIET, FakeHTTPServer, document, whatsapp_webhook

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4 contrato social da Padaria Boa Massa"


def test_inside_the_24_hour_window_a_free_text_goes_out_with_the_bearer_token(
    cloud_api, signed_post, clock
):
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
    cloud_api.route(
        "POST", "/v21.0/PHONE-ID/messages", {"error": {"message": "rate limit"}}, status=429
    )
    company = Company.objects.create(wa_id="5511977776667")

    with pytest.raises(ProviderError, match="429"):
        message_send(company=company, body="Olá", idempotency_key="k-error")

    assert OutboundMessage.objects.get(idempotency_key="k-error").status == OutboundStatus.QUEUED


def test_a_received_document_is_downloaded_as_a_step_of_the_run(cloud_api, signed_post, clock):
    digest = hashlib.sha256(PDF).hexdigest()
    cloud_api.route(
        "GET",
        "/v21.0/MEDIA-1",
        {
            "url": cloud_api.url + "/files/MEDIA-1",
            "mime_type": "application/pdf",
            "sha256": digest,
            "file_size": len(PDF),
        },
    )
    cloud_api.route("GET", "/files/MEDIA-1", PDF, content_type="application/pdf")
    signed_post(
        whatsapp_webhook(
            document(
                "wamid.DOC",
                "contrato social",
                media_id="MEDIA-1",
                filename="contrato.pdf",
                sha256=digest,
            )
        )
    )
    company = Company.objects.get()

    drive(company.run_id)
    clock.advance(QUIET + 1)  # the batch closes: its documents are fetched
    drive(company.run_id)

    stored = Document.objects.get(media_id="MEDIA-1")
    assert stored.file.read() == PDF
    assert (stored.size, stored.sha256) == (len(PDF), digest)
    media_requests = [r for r in cloud_api.requests if r["method"] == "GET"]
    assert all(r["headers"]["Authorization"] == "Bearer test-token" for r in media_requests)


def test_a_customer_file_name_with_directories_is_not_where_the_file_is_stored(
    cloud_api, signed_post, clock
):
    digest = hashlib.sha256(PDF).hexdigest()
    cloud_api.route(
        "GET",
        "/v21.0/MEDIA-3",
        {
            "url": cloud_api.url + "/files/MEDIA-3",
            "mime_type": "application/pdf",
            "sha256": digest,
            "file_size": len(PDF),
        },
    )
    cloud_api.route("GET", "/files/MEDIA-3", PDF, content_type="application/pdf")
    signed_post(
        whatsapp_webhook(
            document(
                "wamid.DOC3",
                "contrato social",
                media_id="MEDIA-3",
                filename="../../etc/contrato.pdf",
                sha256=digest,
            )
        )
    )

    drive(Company.objects.get().run_id)
    clock.advance(QUIET + 1)
    drive(Company.objects.get().run_id)

    stored = Document.objects.get(media_id="MEDIA-3")
    assert re.fullmatch(r"documents/[\d/]+/MEDIA-3(_\w+)?\.pdf", stored.file.name), stored.file.name
    assert stored.file_name == "../../etc/contrato.pdf"
    assert stored.file.read() == PDF


def test_a_download_whose_hash_does_not_match_is_refused(cloud_api, clock):
    cloud_api.route(
        "GET", "/v21.0/MEDIA-2", {"url": cloud_api.url + "/files/MEDIA-2", "sha256": "0" * 64}
    )
    cloud_api.route("GET", "/files/MEDIA-2", b"tampered")

    with pytest.raises(ProviderError, match="sha256 mismatch"):
        get_backend().download_media("MEDIA-2")


# --- media download: only allowed URLs, the token only to the same origin, a size cap ---


def media_meta(server, media_id: str, url: str, **extra) -> None:
    server.route("GET", f"/v21.0/{media_id}", {"url": url, "mime_type": "application/pdf", **extra})


def test_a_file_url_from_the_provider_is_refused_and_nothing_is_read(cloud_api):
    media_meta(cloud_api, "MEDIA-F", "file:///etc/passwd")

    with pytest.raises(MediaRefused, match="file:///etc/passwd"):
        get_backend().download_media("MEDIA-F")


def test_plain_http_is_refused_with_the_production_scheme_list(cloud_api, settings):
    settings.WHATSAPP_MEDIA_SCHEMES = ["https"]
    media_meta(cloud_api, "MEDIA-H", cloud_api.url + "/files/MEDIA-H")

    with pytest.raises(MediaRefused):
        get_backend().download_media("MEDIA-H")

    assert "/files/MEDIA-H" not in cloud_api.paths()


def test_a_host_outside_the_provider_hosts_is_refused(cloud_api):
    media_meta(
        cloud_api, "MEDIA-X", cloud_api.url.replace("127.0.0.1", "localhost") + "/files/MEDIA-X"
    )

    with pytest.raises(MediaRefused, match="WHATSAPP_MEDIA_HOSTS"):
        get_backend().download_media("MEDIA-X")

    assert "/files/MEDIA-X" not in cloud_api.paths()


def test_the_metadata_calls_redirect_to_another_host_does_not_carry_the_token(cloud_api):
    elsewhere = cloud_api.url.replace("127.0.0.1", "localhost") + "/elsewhere/MEDIA-M"
    cloud_api.redirect("/v21.0/MEDIA-M", elsewhere)
    cloud_api.route("GET", "/elsewhere/MEDIA-M", {"url": cloud_api.url + "/files/MEDIA-M"})
    cloud_api.route("GET", "/files/MEDIA-M", PDF, content_type="application/pdf")

    get_backend().download_media("MEDIA-M")

    by_path = {r["path"]: r["headers"] for r in cloud_api.requests}
    assert "Authorization" not in by_path["/elsewhere/MEDIA-M"]


@pytest.fixture
def elsewhere():
    """A second real server, on another port of 127.0.0.1: another origin, recording headers."""
    server = FakeHTTPServer()
    server.thread.start()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


def test_a_send_redirected_to_another_server_does_not_carry_the_token(cloud_api, elsewhere, clock):
    cloud_api.route(
        "POST",
        "/v21.0/PHONE-ID/messages",
        b"",
        status=302,
        content_type="text/plain",
        headers={"Location": elsewhere.url + "/v21.0/PHONE-ID/messages"},
    )
    elsewhere.route("GET", "/v21.0/PHONE-ID/messages", {"messages": [{"id": "wamid.ELSEWHERE"}]})

    message_send(
        company=Company.objects.create(wa_id="5511977776668"),
        body="Olá",
        idempotency_key="k-redirect",
    )

    assert cloud_api.requests[0]["headers"]["Authorization"] == "Bearer test-token"
    assert [r["headers"].get("Authorization") for r in elsewhere.requests] == [None]


def test_the_metadata_call_redirected_to_another_server_does_not_carry_the_token(
    cloud_api, elsewhere
):
    cloud_api.redirect("/v21.0/MEDIA-O", elsewhere.url + "/v21.0/MEDIA-O")
    elsewhere.route("GET", "/v21.0/MEDIA-O", {"url": cloud_api.url + "/files/MEDIA-O"})
    cloud_api.route("GET", "/files/MEDIA-O", PDF, content_type="application/pdf")

    get_backend().download_media("MEDIA-O")

    assert [r["headers"].get("Authorization") for r in elsewhere.requests] == [None]


def test_a_media_redirect_to_another_port_of_the_same_host_does_not_receive_the_token(
    cloud_api, elsewhere, settings
):
    settings.WHATSAPP_MEDIA_HOSTS = [
        f"127.0.0.1:{server.server.server_port}" for server in (cloud_api, elsewhere)
    ]
    media_meta(cloud_api, "MEDIA-Q", cloud_api.url + "/files/MEDIA-Q")
    cloud_api.redirect("/files/MEDIA-Q", elsewhere.url + "/cdn/MEDIA-Q")
    elsewhere.route("GET", "/cdn/MEDIA-Q", PDF, content_type="application/pdf")

    media = get_backend().download_media("MEDIA-Q")

    assert media.content == PDF
    assert [r["headers"].get("Authorization") for r in elsewhere.requests] == [None]


def test_a_media_url_on_a_port_the_allow_list_does_not_name_is_refused(cloud_api, settings):
    settings.WHATSAPP_MEDIA_HOSTS = ["127.0.0.1"]  # the host alone: its scheme's own port only
    media_meta(cloud_api, "MEDIA-P", cloud_api.url + "/files/MEDIA-P")

    with pytest.raises(MediaRefused, match="WHATSAPP_MEDIA_HOSTS"):
        get_backend().download_media("MEDIA-P")

    assert "/files/MEDIA-P" not in cloud_api.paths()


def test_a_redirect_to_another_host_does_not_receive_the_token(cloud_api, settings):
    settings.WHATSAPP_MEDIA_HOSTS = [
        f"{host}:{cloud_api.server.server_port}" for host in ("127.0.0.1", "localhost")
    ]
    media_meta(cloud_api, "MEDIA-R", cloud_api.url + "/files/MEDIA-R")
    cloud_api.redirect(
        "/files/MEDIA-R", cloud_api.url.replace("127.0.0.1", "localhost") + "/cdn/MEDIA-R"
    )
    cloud_api.route("GET", "/cdn/MEDIA-R", PDF, content_type="application/pdf")

    media = get_backend().download_media("MEDIA-R")

    by_path = {r["path"]: r["headers"] for r in cloud_api.requests}
    assert media.content == PDF
    assert by_path["/files/MEDIA-R"]["Authorization"] == "Bearer test-token"
    assert "Authorization" not in by_path["/cdn/MEDIA-R"]


def test_a_redirect_on_the_same_host_keeps_the_token(cloud_api):
    media_meta(cloud_api, "MEDIA-S", cloud_api.url + "/files/MEDIA-S")
    cloud_api.redirect("/files/MEDIA-S", cloud_api.url + "/files/MEDIA-S2")
    cloud_api.route("GET", "/files/MEDIA-S2", PDF, content_type="application/pdf")

    get_backend().download_media("MEDIA-S")

    assert [
        r["headers"].get("Authorization")
        for r in cloud_api.requests
        if r["path"] == "/files/MEDIA-S2"
    ] == ["Bearer test-token"]


def test_a_redirect_to_a_host_not_allowed_is_refused(cloud_api):
    media_meta(cloud_api, "MEDIA-E", cloud_api.url + "/files/MEDIA-E")
    cloud_api.redirect("/files/MEDIA-E", "http://metadata.internal/latest/")

    with pytest.raises(MediaRefused, match="metadata.internal"):
        get_backend().download_media("MEDIA-E")


def test_a_file_the_provider_says_is_too_large_is_never_fetched(cloud_api, settings):
    settings.DOCUMENT_MAX_BYTES = 1000
    media_meta(
        cloud_api, "MEDIA-BIG", cloud_api.url + "/files/MEDIA-BIG", file_size=50 * 1024 * 1024
    )
    cloud_api.route("GET", "/files/MEDIA-BIG", b"x" * 5000)

    with pytest.raises(MediaTooLarge) as refused:
        get_backend().download_media("MEDIA-BIG")

    assert refused.value.size == 50 * 1024 * 1024
    assert "/files/MEDIA-BIG" not in cloud_api.paths()


@pytest.mark.parametrize("send_length", [True, False], ids=["content-length", "until-close"])
def test_a_body_larger_than_the_cap_is_refused_while_streaming(cloud_api, settings, send_length):
    settings.DOCUMENT_MAX_BYTES = 100_000
    media_meta(cloud_api, "MEDIA-L", cloud_api.url + "/files/MEDIA-L")
    cloud_api.route(
        "GET",
        "/files/MEDIA-L",
        b"%PDF-" + b"x" * 1_000_000,
        content_type="application/pdf",
        headers={} if send_length else {"X-Fake-Without-Length": "1"},
    )

    with pytest.raises(MediaTooLarge) as refused:
        get_backend().download_media("MEDIA-L")

    assert 100_000 < refused.value.size <= 1_000_005


def test_a_document_too_large_is_not_stored_and_its_size_is_recorded(
    cloud_api, signed_post, settings, clock
):
    settings.DOCUMENT_MAX_BYTES = 1000
    media_meta(cloud_api, "MEDIA-TL", cloud_api.url + "/files/MEDIA-TL", file_size=5000)
    signed_post(whatsapp_webhook(document("wamid.TL", "contrato social", media_id="MEDIA-TL")))
    stored = Document.objects.get(media_id="MEDIA-TL")

    assert media_download(stored) is False

    stored.refresh_from_db()
    assert not stored.file
    assert stored.size == 5000


def test_a_media_id_is_quoted_into_one_path_segment(cloud_api):
    with pytest.raises(ProviderError):
        get_backend().download_media("../PHONE-ID/messages?x=1")

    assert cloud_api.paths() == ["/v21.0/..%2FPHONE-ID%2Fmessages%3Fx%3D1"]


@pytest.mark.parametrize(
    ("claimed", "content", "extension"),
    [
        ("text/html", PDF, ".pdf"),
        ("application/pdf", b"<html><script>alert(1)</script>", ".bin"),
        ("image/svg+xml", b"\x89PNG\r\n\x1a\n....", ".png"),
    ],
)
def test_the_stored_extension_comes_from_the_bytes_never_from_the_claimed_type(
    cloud_api, signed_post, clock, claimed, content, extension
):
    cloud_api.route(
        "GET", "/v21.0/MEDIA-M", {"url": cloud_api.url + "/files/MEDIA-M", "mime_type": claimed}
    )
    cloud_api.route("GET", "/files/MEDIA-M", content, content_type=claimed)
    signed_post(
        whatsapp_webhook(
            document("wamid.M", "contrato social", media_id="MEDIA-M", mime_type=claimed)
        )
    )
    stored = Document.objects.get(media_id="MEDIA-M")

    media_download(stored)

    assert stored.file.name.endswith(extension), stored.file.name
