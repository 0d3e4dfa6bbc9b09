"""Every document is downloaded and checked before a validation counts it, and a case is
never approved on a file nobody can open (issue 13 item 1)."""

import hashlib

import pytest

from approvals.errors import ApprovalHeld
from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.services import approval_decide
from durable.models import JournalEntry
from processes.onboarding.models import Company, Document, DocumentFetch, DocumentKind
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import ADDRESS, CONTRACT, HELLO, PHONE, SELFIE

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4 a document\n"
JPEG = b"\xff\xd8\xff\xe0 a selfie"


def serve(
    server,
    media_id: str,
    content: bytes,
    *,
    mime_type: str,
    file_size: int | None = None,
    status: int = 200,
) -> None:
    """The fake Graph API holds one media: its metadata, then its bytes."""
    meta = {
        "url": f"{server.url}/files/{media_id}",
        "mime_type": mime_type,
        "sha256": hashlib.sha256(content).hexdigest(),
        "file_size": file_size or len(content),
    }
    server.route("GET", f"/v21.0/{media_id}", meta, status=status)
    server.route("GET", f"/files/{media_id}", content, content_type=mime_type)


@pytest.fixture
def graph(cloud_api, media):
    """The customer's three files on the fake Graph API (as the messages of conftest name them)."""
    serve(cloud_api, "media-wamid.CONTRACT", PDF, mime_type="application/pdf")
    serve(cloud_api, "media-wamid.ADDRESS", PDF, mime_type="application/pdf")
    serve(cloud_api, "media-wamid.SELFIE", JPEG, mime_type="image/jpeg")
    return cloud_api


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


def no_case(run_id: str) -> bool:
    return not ApprovalRequest.objects.filter(run_id=run_id).exists()


def last_ask(run_id: str) -> str:
    return (
        OutboundMessage.objects.filter(idempotency_key__startswith=f"{run_id}:ask:")
        .latest("pk")
        .body
    )


def test_every_document_of_a_batch_is_downloaded_before_the_one_validation(customer, graph):
    customer(HELLO)

    run = customer(CONTRACT, ADDRESS, SELFIE)

    assert sorted(p for p in graph.paths() if p.startswith("/files/")) == [
        "/files/media-wamid.ADDRESS",
        "/files/media-wamid.CONTRACT",
        "/files/media-wamid.SELFIE",
    ]
    assert set(Document.objects.values_list("fetch_status", flat=True)) == {DocumentFetch.STORED}
    fetched = JournalEntry.objects.filter(run_id=run.id, name="store_document_media").order_by(
        "position"
    )
    validated = JournalEntry.objects.get(run_id=run.id, name="validate_documents")
    assert fetched.count() == 3 and fetched.last().position < validated.position
    assert run.waiting_for == "signal:compliance_decision"


def test_a_selfie_over_the_size_limit_in_a_batch_is_refused_and_asked_for_again(customer, graph):
    serve(graph, "media-wamid.SELFIE", JPEG, mime_type="image/jpeg", file_size=15 * 1024 * 1024)
    customer(HELLO)

    run = customer(CONTRACT, ADDRESS, SELFIE)

    selfie = Document.objects.get(kind=DocumentKind.SELFIE)
    assert (selfie.fetch_status, bool(selfie.file)) == (DocumentFetch.TOO_LARGE, False)
    assert no_case(run.id)
    assert "selfie" in last_ask(run.id) and "passa de 10 MB: envie um arquivo menor" in last_ask(
        run.id
    )


def test_a_selfie_whose_bytes_are_not_an_image_is_not_counted(customer, graph):
    serve(graph, "media-wamid.SELFIE", b"<html><script>alert(1)</script>", mime_type="image/jpeg")
    customer(HELLO)

    run = customer(CONTRACT, ADDRESS, SELFIE)

    assert Document.objects.get(kind=DocumentKind.SELFIE).fetch_status == DocumentFetch.REFUSED
    assert no_case(run.id)
    assert "não é PDF, JPEG nem PNG" in last_ask(run.id)


def test_a_document_whose_download_keeps_failing_is_asked_for_again_and_the_run_goes_on(
    customer, graph, clock
):
    serve(graph, "media-wamid.SELFIE", JPEG, mime_type="image/jpeg", status=500)
    customer(HELLO)

    customer(CONTRACT, ADDRESS, SELFIE)
    for _ in range(3):  # the step's retries, each after its back-off
        clock.advance(60)
        run = customer()

    assert run.status == "waiting" and no_case(run.id)
    assert Document.objects.get(kind=DocumentKind.SELFIE).fetch_status == DocumentFetch.FAILED
    assert "não conseguimos baixar" in last_ask(run.id) and "envie de novo" in last_ask(run.id)


def test_a_document_row_nobody_downloaded_does_not_complete_the_set(customer, graph):
    customer(HELLO)
    Document.objects.create(
        company=Company.objects.get(wa_id=PHONE),
        kind=DocumentKind.SELFIE,
        media_id="never-fetched",
        mime_type="image/jpeg",
        file_name="selfie.jpg",
    )

    run = customer(CONTRACT, ADDRESS)

    assert no_case(run.id)
    assert run.waiting_for == "signal:documents_received"


@pytest.fixture
def case_with_a_lost_file(customer, graph, media) -> ApprovalRequest:
    """In review with three stored documents; then the contract's file goes missing from storage."""
    customer(HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    contract = Document.objects.get(kind=DocumentKind.ARTICLES)
    contract.file.storage.delete(contract.file.name)
    return ApprovalRequest.objects.get(run_id=run.id)


def test_the_approve_button_is_disabled_with_the_reason_while_a_counted_document_cannot_be_viewed(
    client, ana, case_with_a_lost_file
):
    client.force_login(ana)

    page = client.get(f"/approvals/{case_with_a_lost_file.pk}/").content.decode()

    assert 'value="approve" class="primary" disabled' in page
    assert "contrato.pdf cannot be viewed: the stored file is missing" in page


def test_an_approval_of_a_case_whose_document_cannot_be_viewed_is_refused(
    ana, case_with_a_lost_file
):
    with pytest.raises(ApprovalHeld, match="cannot be viewed"):
        approval_decide(case_with_a_lost_file.pk, actor=ana, outcome="approve")

    case_with_a_lost_file.refresh_from_db()
    assert case_with_a_lost_file.status == ApprovalStatus.PENDING
