"""A decision's two texts (issue 35, item 4): the reviewer's reason stays with compliance, the
message to the customer (a standard text in Portuguese and an optional line) goes with the
outcome. Played through the reviewer UI's decide form."""

import pytest
from django.urls import reverse

from approvals.models import ApprovalAudit, ApprovalDecision, ApprovalStatus
from approvals.services import approval_decide
from durable.testing import drive
from processes.whatsapp.models import OutboundMessage
from tests.processes.test_onboarding import open_case

pytestmark = pytest.mark.django_db

REASON = "contract signatures do not match the ID"


def decide_on_the_page(client, reviewer, case, outcome: str, **form):
    client.force_login(reviewer)
    return client.post(reverse("approval_decide", args=[case.pk]), {"outcome": outcome, **form})


def bodies() -> list[str]:
    return list(OutboundMessage.objects.values_list("body", flat=True))


def test_a_rejection_tells_the_customer_the_chosen_message_and_never_the_reason(
    client, ana, in_review
):
    case = open_case(in_review.id)

    response = decide_on_the_page(
        client,
        ana,
        case,
        "reject",
        reason=REASON,
        customer_message_key="documents_inconsistent",
        customer_message="Se quiser, envie um novo pedido em 30 dias.",
    )
    drive(in_review.id)

    assert response.status_code == 302
    message = (
        "Os documentos enviados não permitiram confirmar os dados da empresa. "
        "Se quiser, envie um novo pedido em 30 dias."
    )
    assert ApprovalDecision.objects.get(request=case).customer_message == message
    assert f"Não foi possível abrir a sua conta PJ agora. {message}" in bodies()
    assert not [body for body in bodies() if "signatures" in body]
    audit = ApprovalAudit.objects.get(request=case, action="reject")
    assert (audit.reason, audit.detail["customer_message"]) == (REASON, message)


def test_a_rejection_without_a_message_says_only_the_outcome(client, ana, in_review):
    decide_on_the_page(client, ana, open_case(in_review.id), "reject", reason=REASON)
    drive(in_review.id)

    assert OutboundMessage.objects.get(idempotency_key=f"{in_review.id}:rejected").body == (
        "Não foi possível abrir a sua conta PJ agora."
    )


def test_asking_for_documents_sends_what_to_send_not_the_reason(client, ana, in_review):
    decide_on_the_page(
        client,
        ana,
        open_case(in_review.id),
        "more_documents",
        reason=REASON,
        customer_message_key="articles_updated",
    )
    drive(in_review.id)

    asked = OutboundMessage.objects.get(idempotency_key=f"{in_review.id}:more:1").body
    assert asked == (
        "A nossa equipe de análise precisa de mais documentos. Envie o "
        "contrato social com a última alteração. Responda por aqui, por favor."
    )


def test_asking_for_documents_without_saying_what_to_send_is_refused_and_keeps_what_was_typed(
    client, ana, in_review
):
    case = open_case(in_review.id)

    response = decide_on_the_page(
        client, ana, case, "more_documents", reason=REASON, customer_message=""
    )

    case.refresh_from_db()
    assert response.status_code == 400 and case.status == ApprovalStatus.PENDING
    page = response.content.decode()
    assert "Tell the customer what to send" in page and REASON in page


def test_a_standard_message_of_another_outcome_is_refused(client, ana, in_review):
    case = open_case(in_review.id)

    response = decide_on_the_page(
        client, ana, case, "reject", reason=REASON, customer_message_key="address_recent"
    )

    case.refresh_from_db()
    assert response.status_code == 400 and case.status == ApprovalStatus.PENDING


def test_the_form_offers_the_standard_messages_in_the_reviewers_language(
    settings, client, ana, in_review
):
    client.force_login(ana)
    url = reverse("approval_case", args=[open_case(in_review.id).pk])

    english = client.get(url).content.decode()
    settings.LANGUAGE_CODE = "pt-br"
    portuguese = client.get(url).content.decode()

    assert "Send the articles of association with their latest amendment." in english
    assert "Internal: compliance and the auditors only." in english
    assert "Envie o contrato social com a última alteração." in portuguese
    assert "Send the articles" not in portuguese


def test_a_caller_older_than_the_message_has_its_reason_sent_when_asking_for_documents(
    ana, in_review
):
    approval_decide(
        open_case(in_review.id).pk,
        actor=ana,
        outcome="more_documents",
        reason="o comprovante de endereço em nome da empresa",
    )
    drive(in_review.id)

    asked = OutboundMessage.objects.get(idempotency_key=f"{in_review.id}:more:1").body
    assert "o comprovante de endereço em nome da empresa" in asked


def test_a_standard_reason_is_recorded_with_the_reviewers_own_words(client, ana, in_review):
    case = open_case(in_review.id)

    decide_on_the_page(
        client,
        ana,
        case,
        "reject",
        reason_key="cnpj_inactive",
        reason="situação BAIXADA",
        customer_message_key="cnpj_situation",
    )

    assert ApprovalDecision.objects.get(request=case).reason == (
        "The CNPJ is not active at the Receita Federal. — situação BAIXADA"
    )


def test_a_standard_reason_alone_is_enough_to_reject(client, ana, in_review):
    case = open_case(in_review.id)

    response = decide_on_the_page(client, ana, case, "reject", reason_key="cnpj_taken")

    case.refresh_from_db()
    assert response.status_code == 302 and case.status == ApprovalStatus.REJECTED
    assert (
        ApprovalDecision.objects.get(request=case).reason
        == "The CNPJ already belongs to another customer."
    )


def test_a_standard_reason_of_another_outcome_is_refused(client, ana, in_review):
    case = open_case(in_review.id)

    response = decide_on_the_page(
        client, ana, case, "reject", reason_key="address_outdated", reason="x"
    )

    case.refresh_from_db()
    assert response.status_code == 400 and case.status == ApprovalStatus.PENDING
