"""The onboarding sections of a compliance case page, and the permission-checked document files."""

import pytest
from django.contrib.auth.models import Group
from django.core.files.base import ContentFile

from approvals.models import ApprovalRequest
from durable import days
from durable.models import JournalEntry
from durable.testing import drive
from processes.onboarding.models import Company, Document, DocumentKind
from tests.processes.conftest import (
    ADDRESS,
    CNPJ,
    CONTRACT,
    HELLO,
    NEW_CONTRACT,
    PHONE,
    SELFIE,
    document,
    make_reviewer,
)
from tests.processes.test_onboarding import decide, open_case
from tests.processes.test_onboarding_conversations import NO_CNPJ_HELLO

pytestmark = pytest.mark.django_db

PDF = b"%PDF-1.4\n% a contract\n"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def case(in_review, media) -> ApprovalRequest:
    """The open onboarding case, its company's contract stored as a file."""
    contract = Document.objects.get(kind=DocumentKind.ARTICLES)
    contract.file.save("contrato.pdf", ContentFile(PDF))
    return ApprovalRequest.objects.get(run_id=in_review.id)


@pytest.fixture
def contract() -> Document:
    return Document.objects.get(kind=DocumentKind.ARTICLES)


def file_url(case, document, what: str = "download") -> str:
    return f"/onboarding/cases/{case.pk}/documents/{document.pk}/{what}/"


def test_the_case_page_shows_the_company_its_documents_findings_and_conversation(client, ana, case):
    client.force_login(ana)

    page = client.get(f"/approvals/{case.pk}/").content.decode()

    assert "Padaria Boa Massa" in page and CNPJ in page and f"+{PHONE}" in page
    assert "contrato.pdf" in page and "luz.pdf" in page
    assert file_url(case, Document.objects.get(kind=DocumentKind.ARTICLES)) in page
    assert "Validator, round by round" in page and "Proof of address, Selfie" in page
    conversation = page[page.index('data-testid="conversation"') :]
    said = [
        "Oi, quero abrir uma conta PJ",
        "Olá! Recebemos o CNPJ",
        "Document</span>",
        "contrato.pdf",
        "Ainda falta",
        "luz.pdf",
        "Image</span>",
    ]
    assert [conversation.index(text) for text in said] == sorted(
        conversation.index(text) for text in said
    )


def test_a_reviewer_downloads_a_document_as_an_attachment(client, ana, case, contract):
    client.force_login(ana)

    response = client.get(file_url(case, contract))

    assert response.status_code == 200
    assert b"".join(response.streaming_content) == PDF
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="contrato.pdf"'
    assert response["X-Content-Type-Options"] == "nosniff"


def test_a_reviewer_outside_the_case_groups_gets_403_on_its_documents(client, case, contract):
    ApprovalRequest.objects.get(pk=case.pk).candidate_groups.set(
        [Group.objects.get(name="kyc-senior")]
    )
    junior = make_reviewer("joana", reviewer=False)
    junior.groups.add(Group.objects.get(name="compliance"), Group.objects.get(name="kyc"))
    client.force_login(junior)

    response = client.get(file_url(case, contract))

    assert response.status_code == 403


def test_a_reviewer_previews_a_pdf_inline(client, ana, case, contract):
    client.force_login(ana)

    response = client.get(file_url(case, contract, "preview"))

    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("inline")


def test_a_file_of_an_unsafe_type_is_never_shown_inline(client, ana, case, contract):
    Document.objects.filter(pk=contract.pk).update(mime_type="text/html", file_name="<x>.html")
    client.force_login(ana)

    response = client.get(file_url(case, contract, "preview"))

    assert response["Content-Type"] == "application/octet-stream"
    assert response["Content-Disposition"] == 'attachment; filename="_x_.html"'


def test_a_user_outside_compliance_gets_403_and_no_file(client, case, contract):
    client.force_login(make_reviewer("olga", reviewer=False))

    response = client.get(file_url(case, contract))

    assert response.status_code == 403
    assert PDF not in response.content


def test_a_supervisor_who_is_no_reviewer_sees_the_case_but_not_its_documents(
    client, sofia, case, contract
):
    client.force_login(sofia)

    page, document = client.get(f"/approvals/{case.pk}/"), client.get(file_url(case, contract))

    assert page.status_code == 200
    assert document.status_code == 403 and PDF not in document.content


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, case, contract):
    response = client.get(file_url(case, contract))

    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_document_of_another_company_is_not_found_through_this_case(client, ana, case, media):
    other = Company.objects.create(wa_id="5511900001111", name="Outra")
    foreign = Document.objects.create(
        company=other, kind=DocumentKind.ARTICLES, media_id="m-other", mime_type="application/pdf"
    )
    foreign.file.save("secret.pdf", ContentFile(b"%PDF other"))
    client.force_login(ana)

    response = client.get(file_url(case, foreign))

    assert response.status_code == 404


def test_a_stored_name_outside_the_media_folder_is_never_served(client, ana, case, contract, media):
    (media.parent / "outside.pdf").write_bytes(b"%PDF private")
    Document.objects.filter(pk=contract.pk).update(file="../outside.pdf")
    client.force_login(ana)

    response = client.get(file_url(case, contract))

    assert response.status_code == 404
    assert b"private" not in response.content


def test_a_document_never_downloaded_from_whatsapp_is_404(client, ana, case):
    client.force_login(ana)
    address = Document.objects.get(kind=DocumentKind.ADDRESS)

    response = client.get(file_url(case, address))

    assert response.status_code == 404


@pytest.fixture
def page_in_portuguese(settings, client, ana):
    """A case's page as ana reads it with the project in pt-BR."""
    settings.LANGUAGE_CODE = "pt-br"
    client.force_login(ana)
    return lambda case: client.get(f"/approvals/{case.pk}/").content.decode()


def part(page: str, testid: str, end: str = "</table>") -> str:
    """The element marked ``data-testid`` and what follows it, up to ``end``."""
    rest = page[page.index(f'data-testid="{testid}"') :]
    return rest[: rest.index(end)] if end else rest


def test_a_portuguese_reviewer_reads_the_validator_in_portuguese(customer, page_in_portuguese):
    selfie_pdf = document(
        "wamid.SELFIE-PDF",
        "selfie",
        filename="selfie.pdf",
        mime_type="application/pdf",
        wa_id=PHONE,
    )
    for messages in ([HELLO], [CONTRACT], [selfie_pdf], [ADDRESS, SELFIE]):
        run = customer(*messages)

    rounds = part(page_in_portuguese(ApprovalRequest.objects.get(run_id=run.id)), "validation")

    assert "Comprovante de endereço, Selfie" in rounds
    assert "selfie.pdf: application/pdf não é aceito" in rounds and "is not accepted" not in rounds
    assert "proof_of_address" not in rounds


def test_the_summary_is_one_block_in_the_readers_language(
    customer, clock, client, page_in_portuguese
):
    customer(NO_CNPJ_HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    clock.advance(days(1))  # asked for the CNPJ, never answered: high risk
    drive(run.id)

    page = page_in_portuguese(ApprovalRequest.objects.get(run_id=run.id))

    before_the_conversation = page.split('data-testid="conversation"')[0]
    for english in (
        "Customer id",
        "Documents received",
        "Cnpj",
        "Review round",
        "no valid CNPJ given",
        "Risk",
    ):
        assert english not in before_the_conversation, english
    assert "Rodada de análise" in page and "Alto: nenhum CNPJ válido informado" in page
    assert "Padaria Boa Massa — CNPJ não informado" in page and "not given" not in page
    queue = client.get("/approvals/").content.decode()
    assert "Padaria Boa Massa — CNPJ não informado" in queue and "not given" not in queue


def test_the_timeline_folds_the_engines_bookkeeping_away_and_says_what_the_run_waits_for(
    case, page_in_portuguese
):
    timeline = part(page_in_portuguese(case), "run-status", end="")

    bookkeeping = JournalEntry.objects.filter(run_id=case.run_id, kind__in=["patch", "attributes"])
    assert bookkeeping.exists()  # the run has some: a stage published, a change id marked
    for entry in bookkeeping:
        assert f'data-entry="{entry.position}"' not in timeline
    assert (
        "aguardando (Decisão do compliance)" in timeline
        and "signal:compliance_decision" not in timeline
    )


def test_the_conversation_reads_in_portuguese(case, page_in_portuguese):
    conversation = part(page_in_portuguese(case), "conversation")

    assert "Documento</span>" in conversation and "Imagem</span>" in conversation
    assert "(enviada)" in conversation
    for english in ("[document]", "[image]", "(sent)"):
        assert english not in conversation


def test_a_later_rounds_case_names_the_case_that_sent_it_back_and_why(
    customer, in_review, ana, page_in_portuguese
):
    first = open_case(in_review.id)
    decide(ana, in_review.id, "more_documents", "o contrato está sem a última alteração")
    customer(NEW_CONTRACT)
    second = open_case(in_review.id)

    page = page_in_portuguese(second)

    assert second.pk != first.pk and second.summary["follows_case"] == first.pk
    assert f"#{first.pk}, devolvido: o contrato está sem a última alteração" in page
