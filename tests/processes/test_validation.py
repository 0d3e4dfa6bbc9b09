"""Document checks: the rules, and the language-model checker against a local fake API."""

import json

import pytest

from approvals.models import ApprovalRequest
from approvals.services import approval_decide
from durable import services
from durable.models import JournalEntry
from durable.testing import drive
from processes.onboarding.models import Company, Document
from processes.onboarding.validation import (
    CheckerError,
    DocumentFacts,
    LanguageModelChecker,
    RulesChecker,
    guess_kind,
)

ALL_THREE = [
    DocumentFacts("articles_of_association", "application/pdf", size=1000),
    DocumentFacts("proof_of_address", "image/png", size=1000),
    DocumentFacts("selfie", "image/jpeg", size=1000),
]


def model_reply(content) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": json.dumps(content)}}]}


def llm_checker(url: str) -> LanguageModelChecker:
    return LanguageModelChecker(
        base_url=url + "/v1", api_key="test-key", model="tiny", rules=RulesChecker(max_bytes=5000)
    )


def test_rules_accept_the_three_required_documents():
    assert RulesChecker(max_bytes=5000).check(ALL_THREE).ok


def test_rules_list_what_is_missing_and_what_is_wrong():
    docs = [
        DocumentFacts("articles_of_association", "application/zip", file_name="contrato.zip"),
        DocumentFacts("selfie", "image/jpeg", size=9000, file_name="eu.jpg"),
    ]

    result = RulesChecker(max_bytes=5000).check(docs)

    assert not result.ok
    assert result.missing == ["articles_of_association", "proof_of_address", "selfie"]
    assert result.problems == [
        "contrato.zip: application/zip is not accepted",
        "eu.jpg: larger than 5000 bytes",
    ]


def said_to_the_customer(result) -> list[str]:
    from processes.onboarding.steps import problem_pt

    return [problem_pt(note) for note in result.notes if not note["solved"]]


@pytest.mark.parametrize(
    "document, said",
    [
        (
            DocumentFacts("selfie", "application/pdf", size=10, file_name="selfie.pdf"),
            "o arquivo selfie.pdf é um PDF, mas para a selfie precisamos de uma foto (JPEG ou PNG)",
        ),
        (
            DocumentFacts(
                "articles_of_association", "application/zip", size=10, file_name="contrato.zip"
            ),
            "o arquivo contrato.zip (application/zip) não é aceito: envie PDF, JPEG ou PNG",
        ),
        (
            DocumentFacts(
                "proof_of_address", "application/pdf", size=9000, file_name="comprovante_grande.pdf"
            ),
            "o arquivo comprovante_grande.pdf passa de 5000 bytes: envie um arquivo menor",
        ),
        (
            DocumentFacts(
                "proof_of_address", "application/pdf", file_name="luz.pdf", fetch_status="failed"
            ),
            "não conseguimos baixar o arquivo luz.pdf: envie de novo",
        ),
        (
            DocumentFacts("unknown", "application/pdf", size=10, file_name="scan.pdf"),
            "não sabemos qual documento é o arquivo scan.pdf: escreva na legenda "
            "se é o contrato social, o comprovante de endereço ou a selfie",
        ),
        (
            DocumentFacts("selfie", "image/webp", size=10),
            "o documento enviado como selfie do responsável é um WEBP, "
            "mas para a selfie precisamos de uma foto (JPEG ou PNG)",
        ),
    ],
)
def test_each_problem_is_said_to_the_customer_in_portuguese_with_what_to_send(document, said):
    result = RulesChecker(max_bytes=5000).check([document])

    assert said_to_the_customer(result) == [said]


def test_a_problem_a_later_document_solved_is_not_said_again_but_stays_on_record():
    docs = [
        DocumentFacts(
            "proof_of_address", "application/pdf", size=9000, file_name="comprovante_grande.pdf"
        ),
        DocumentFacts("proof_of_address", "application/pdf", size=100, file_name="comprovante.pdf"),
        DocumentFacts("selfie", "application/pdf", size=10, file_name="selfie.pdf"),
    ]

    result = RulesChecker(max_bytes=5000).check(docs)

    assert said_to_the_customer(result) == [
        "o arquivo selfie.pdf é um PDF, mas para a selfie precisamos de uma foto (JPEG ou PNG)"
    ]
    assert result.problems == [
        "comprovante_grande.pdf: larger than 5000 bytes",  # the reviewer still sees both
        "selfie.pdf: application/pdf is not accepted",
    ]


@pytest.mark.parametrize(
    "caption, file_name, message_type, kind",
    [
        ("Contrato Social", "", "document", "articles_of_association"),
        ("", "comprovante_endereço.pdf", "document", "proof_of_address"),
        ("", "", "image", "selfie"),
        ("", "scan.pdf", "document", "unknown"),
    ],
)
def test_the_kind_is_read_from_caption_or_file_name(caption, file_name, message_type, kind):
    assert guess_kind(message_type=message_type, file_name=file_name, caption=caption) == kind


def test_the_model_checker_asks_the_api_and_adds_its_problems(fake_http):
    fake_http.route(
        "POST",
        "/v1/chat/completions",
        model_reply({"ok": False, "missing": [], "problems": ["the selfie is blurred"]}),
    )

    result = llm_checker(fake_http.url).check(ALL_THREE)

    assert (result.ok, result.problems, result.checker) == (False, ["the selfie is blurred"], "llm")
    request = fake_http.requests[0]
    assert request["headers"]["Authorization"] == "Bearer test-key"
    assert json.loads(request["body"])["model"] == "tiny"


def test_the_model_cannot_accept_what_the_rules_reject(fake_http):
    fake_http.route(
        "POST", "/v1/chat/completions", model_reply({"ok": True, "missing": [], "problems": []})
    )

    result = llm_checker(fake_http.url).check(ALL_THREE[:2])

    assert (result.ok, result.missing) == (False, ["selfie"])


def test_an_answer_that_is_not_json_is_a_checker_error(fake_http):
    fake_http.route(
        "POST", "/v1/chat/completions", {"choices": [{"message": {"content": "Looks fine to me!"}}]}
    )

    with pytest.raises(CheckerError, match="not the expected JSON"):
        llm_checker(fake_http.url).check(ALL_THREE)


@pytest.mark.django_db
def test_the_model_is_asked_inside_a_step_so_a_replay_does_not_ask_again(
    fake_http, settings, clock, ana
):
    settings.DOCUMENT_CHECKER, settings.LLM_MODEL = "llm", "tiny"
    settings.LLM_API_BASE_URL = fake_http.url + "/v1"
    fake_http.route(
        "POST", "/v1/chat/completions", model_reply({"ok": True, "missing": [], "problems": []})
    )
    company = Company.objects.create(wa_id="5511900000001")
    for kind, mime in [
        ("articles_of_association", "application/pdf"),
        ("proof_of_address", "application/pdf"),
        ("selfie", "image/jpeg"),
    ]:
        Document.objects.create(company=company, kind=kind, mime_type=mime, media_id=kind)
    run = services.run_start("onboarding", company.customer_id, id=company.run_id, actor="test")
    drive(run.id)
    for document in company.documents.all():
        services.signal_send(
            run.id, "documents_received", {"document_id": document.pk}, actor="test"
        )
    drive(run.id)
    clock.advance(31)  # the quiet period: the batch closes
    drive(run.id)
    clock.advance(86400)  # asked for the CNPJ, never answered

    drive(run.id)
    case = ApprovalRequest.objects.get(run_id=run.id)
    approval_decide(case.pk, actor=ana, outcome="reject", reason="CNPJ inapto")
    run = drive(run.id)  # replays validate_documents from the journal

    assert run.result == "rejected"
    assert len(fake_http.requests) == 1
    assert (
        JournalEntry.objects.get(run_id=run.id, name="validate_documents").result["checker"]
        == "llm"
    )


@pytest.mark.django_db
def test_when_the_model_never_answers_the_rules_decide(fake_http, settings, clock):
    settings.DOCUMENT_CHECKER, settings.LLM_MODEL = "llm", "tiny"
    settings.LLM_API_BASE_URL = fake_http.url + "/v1"
    fake_http.route("POST", "/v1/chat/completions", {"error": "overloaded"}, status=503)
    company = Company.objects.create(wa_id="5511900000002")
    Document.objects.create(company=company, kind="selfie", mime_type="image/jpeg", media_id="m")
    run = services.run_start("onboarding", company.customer_id, id=company.run_id, actor="test")
    drive(run.id)
    services.signal_send(
        run.id, "documents_received", {"document_id": company.documents.get().pk}, actor="test"
    )
    drive(run.id)
    clock.advance(31)  # the quiet period: the batch closes

    for _ in range(3):  # three attempts, with back-off between them
        drive(run.id)
        clock.advance(60)
    run = drive(run.id)

    assert len(fake_http.requests) == 3
    assert JournalEntry.objects.filter(run_id=run.id, name="validate_documents_by_rules").exists()
    assert run.waiting_for == "signal:documents_received"
