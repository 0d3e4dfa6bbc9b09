"""Onboarding under real conversations: documents sent together, late, or during a review
(issue 13), played through the signed WhatsApp webhook and driven in-process."""

import pytest

from approvals.models import ApprovalRequest, ApprovalStatus
from durable import days
from durable.models import JournalEntry, RunStatus
from durable.testing import drive
from processes.onboarding.models import Company, CompanyStatus
from processes.whatsapp.models import InboundMessage, OutboundMessage
from tests.processes.conftest import (
    ADDRESS,
    CNPJ,
    CONTRACT,
    HELLO,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)
from tests.processes.test_onboarding import decide, sent_keys

pytestmark = pytest.mark.django_db

LATE_CONTRACT = document(
    "wamid.LATE", "Contrato social", filename="contrato-late.pdf", wa_id=CONTRACT["from"]
)


def validations(run_id: str) -> int:
    return JournalEntry.objects.filter(run_id=run_id, name__startswith="validate_documents").count()


def test_documents_sent_together_are_validated_once_and_answered_with_one_ask(customer):
    customer(HELLO)

    run = customer(CONTRACT, ADDRESS)

    assert validations(run.id) == 1
    assert sent_keys(run.id) == ["greet", "ask:1"]
    ask = OutboundMessage.objects.get(idempotency_key=f"{run.id}:ask:1")
    assert "selfie" in ask.body and "comprovante" not in ask.body


def test_documents_sent_seconds_apart_are_one_batch(customer, signed_post, clock):
    run = customer(HELLO)
    signed_post(whatsapp_webhook(CONTRACT))
    drive(run.id)
    clock.advance(5)

    run = customer(ADDRESS)

    assert validations(run.id) == 1
    assert sent_keys(run.id) == ["greet", "ask:1"]


def test_the_whole_set_in_one_delivery_goes_to_review_without_an_ask(customer):
    customer(HELLO)

    run = customer(CONTRACT, ADDRESS, SELFIE)

    assert run.waiting_for == "signal:compliance_decision"
    assert validations(run.id) == 1
    assert ":ask:" not in " ".join(sent_keys(run.id))


def test_a_document_sent_during_the_review_does_not_answer_the_reviewers_request(
    customer, in_review, signed_post, ana
):
    signed_post(whatsapp_webhook(LATE_CONTRACT))  # buffered: the run waits for compliance
    drive(in_review.id)

    run = decide(ana, in_review.id, "more_documents", "Envie o contrato social atualizado")

    assert run.waiting_for == "signal:documents_received"
    assert ApprovalRequest.objects.filter(run_id=run.id, status=ApprovalStatus.PENDING).count() == 0
    assert Company.objects.get().documents.get(media_id="media-wamid.LATE")  # kept, not lost


def test_a_complete_set_tells_the_customer_the_case_is_under_review_once_per_review_round(
    customer, in_review, ana
):
    drive(in_review.id)  # a replay sends nothing again
    run = decide(ana, in_review.id, "more_documents", "Envie o contrato social atualizado")
    customer(LATE_CONTRACT)

    notices = OutboundMessage.objects.filter(idempotency_key__contains=":under-review:").order_by(
        "pk"
    )
    assert [n.idempotency_key.removeprefix(run.id) for n in notices] == [
        ":under-review:1",
        ":under-review:2",
    ]
    assert "em análise" in notices[0].body


def says(text: str, n: int = 1) -> dict:
    return whatsapp_message(f"wamid.SAYS{n}", wa_id=CONTRACT["from"], text=text)


@pytest.mark.parametrize("word", ["cancelar", "CANCELAR", "Cancel", "desistir", "Desistír!"])
def test_a_withdrawal_word_at_the_documents_wait_ends_the_run_cancelled_with_one_goodbye(
    customer, word
):
    customer(HELLO)
    customer(CONTRACT)

    run = customer(says(word))

    assert run.status == RunStatus.CANCELLED
    assert sent_keys(run.id) == ["greet", "ask:1", "bye"]
    assert Company.objects.get().status == CompanyStatus.WITHDRAWN


def test_a_withdrawal_during_the_review_cancels_the_open_case_and_says_goodbye_once(
    customer, in_review
):
    customer(says("cancelar"))

    run = customer(says("cancelar", 2))  # said twice: nothing more happens

    assert run.status == RunStatus.CANCELLED
    assert ApprovalRequest.objects.get(run_id=run.id).status == ApprovalStatus.CANCELLED
    assert sent_keys(run.id).count("bye") == 1 and sent_keys(run.id)[-1] == "bye"
    assert InboundMessage.objects.get(wamid="wamid.SAYS2").note.startswith(
        "withdrawal: nothing to cancel"
    )


def sent_by(run_id: str) -> list[str]:
    """The keys of the messages this run sent, without its id (not a later application's:
    ``<run id>:2:greet`` is the second application's)."""
    keys = OutboundMessage.objects.filter(idempotency_key__startswith=run_id + ":").order_by(
        "created_at", "pk"
    )
    rests = [
        key.removeprefix(run_id + ":") for key in keys.values_list("idempotency_key", flat=True)
    ]
    return [rest for rest in rests if not rest.split(":", 1)[0].isdigit()]


def test_writing_again_after_withdrawing_starts_a_new_application_with_a_run_of_its_own(customer):
    customer(HELLO)
    withdrawn = customer(says("cancelar"))
    assert "recomeçar" in OutboundMessage.objects.get(idempotency_key=f"{withdrawn.id}:bye").body

    run = customer(says("oi, quero recomeçar", 2))

    company = Company.objects.get()
    assert (company.application, company.status) == (2, CompanyStatus.COLLECTING)
    assert run.id == f"onboarding:{company.customer_id}:2" != withdrawn.id
    assert run.status == RunStatus.WAITING and sent_by(run.id) == ["greet"]
    assert sent_by(withdrawn.id) == ["greet", "bye"]  # the old one is left as it ended
    assert InboundMessage.objects.get(wamid="wamid.SAYS2").company == company


def test_a_new_application_takes_the_documents_already_on_file(customer, in_review):
    customer(says("cancelar"))

    run = customer(says("voltei", 2))

    assert run.id.endswith(":2")
    assert run.waiting_for == "signal:compliance_decision"  # the set is complete already
    assert ApprovalRequest.objects.filter(run_id=run.id, status=ApprovalStatus.PENDING).count() == 1


def test_an_application_closed_for_want_of_documents_starts_again_when_the_customer_writes(
    customer, clock
):
    first = customer(HELLO)
    clock.advance(days(7))
    drive(first.id)  # the reminder
    clock.advance(days(3))
    assert drive(first.id).result == "expired"

    run = customer(says("desculpe a demora", 2))

    assert run.id.endswith(":2") and run.status == RunStatus.WAITING
    assert Company.objects.get().status == CompanyStatus.COLLECTING


def test_an_approved_company_writing_again_starts_nothing_new(customer, in_review, ana):
    approved = decide(ana, in_review.id, "approve")

    customer(says("obrigado!", 2))

    company = Company.objects.get()
    assert (company.application, company.status, company.run_id) == (
        1,
        CompanyStatus.APPROVED,
        approved.id,
    )


def test_an_approval_the_customers_withdrawal_overtakes_is_superseded_and_opens_nothing(
    customer, in_review, ana, client
):
    from approvals.services import approval_decide
    from processes.onboarding.models import Account

    case = ApprovalRequest.objects.get(run_id=in_review.id)
    approval_decide(case.pk, actor=ana, outcome="approve")  # the run has not woken to read it yet

    run = customer(says("cancelar"))

    case.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and not Account.objects.exists()
    assert (case.status, Company.objects.get().status) == (
        ApprovalStatus.SUPERSEDED,
        CompanyStatus.WITHDRAWN,
    )
    client.force_login(ana)
    page = client.get(f"/approvals/{case.pk}/").content.decode()
    assert "before it acted on the decision: nothing was done with it" in page


def test_a_sentence_that_mentions_cancelling_is_not_a_withdrawal(customer):
    customer(HELLO)

    run = customer(says("não quero cancelar, só falta a selfie"))

    assert run.status == RunStatus.WAITING


NO_CNPJ_HELLO = whatsapp_message(
    "wamid.HI", wa_id=CONTRACT["from"], text="Oi, quero abrir uma conta PJ"
)


def test_a_customer_who_never_gave_a_cnpj_is_asked_once_and_the_answer_makes_the_case_low_risk(
    customer,
):
    customer(NO_CNPJ_HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    assert run.waiting_for == "signal:cnpj_received"
    assert sent_keys(run.id) == ["greet", "ask-cnpj"]

    run = customer(says(f"o CNPJ é {CNPJ}"))

    case = ApprovalRequest.objects.get(run_id=run.id)
    assert (case.risk, case.required_approvals, case.summary["cnpj"]) == ("low", 1, CNPJ)


def test_a_cnpj_that_never_comes_is_asked_for_once_and_the_case_stays_high_risk(
    customer, clock, ana
):
    customer(NO_CNPJ_HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    customer(says("o CNPJ é 11.222.333/0001-82"))  # wrong check digits: not a CNPJ

    clock.advance(days(1))
    run = drive(run.id)
    decide(ana, run.id, "more_documents", "Envie o contrato social atualizado")
    run = customer(LATE_CONTRACT)

    cases = ApprovalRequest.objects.filter(run_id=run.id).order_by("pk")
    assert [(c.risk, c.summary["cnpj"]) for c in cases] == [
        ("high", "not given"),
        ("high", "not given"),
    ]
    assert sent_keys(run.id).count("ask-cnpj") == 1


def test_a_cnpj_written_during_the_review_counts_at_the_next_round(customer, clock, ana):
    customer(NO_CNPJ_HELLO)
    run = customer(CONTRACT, ADDRESS, SELFIE)
    clock.advance(days(1))
    drive(run.id)  # opened high risk
    customer(says(f"desculpe, o CNPJ: {CNPJ}"))

    decide(ana, run.id, "more_documents", "Envie o contrato social atualizado")
    run = customer(LATE_CONTRACT)

    second = ApprovalRequest.objects.filter(run_id=run.id).latest("pk")
    assert (second.risk, second.summary["cnpj"]) == ("low", CNPJ)


def status_reply(wamid: str) -> str:
    return OutboundMessage.objects.get(idempotency_key=f"status:{wamid}").body


@pytest.mark.parametrize("word", ["status", "Situação?", "andamento"])
def test_asking_status_is_answered_from_the_run_with_what_is_still_missing(customer, word):
    customer(HELLO)
    before = customer(CONTRACT)
    entries = JournalEntry.objects.filter(run_id=before.id).count()

    run = customer(says(word))

    assert status_reply("wamid.SAYS1") == (
        "O seu pedido de conta PJ aguarda: comprovante de endereço, selfie do responsável."
    )
    assert run.status == RunStatus.WAITING
    assert JournalEntry.objects.filter(run_id=run.id).count() == entries  # the run did nothing
    assert (
        InboundMessage.objects.get(wamid="wamid.SAYS1").note
        == "status: answered from the run (awaiting documents)"
    )


def test_asking_status_during_the_review_says_it_is_in_review(customer, in_review):
    customer(says("status"))

    assert status_reply("wamid.SAYS1") == "Os seus documentos estão em análise pela nossa equipe."


def test_a_status_asked_twice_by_a_redelivered_message_is_answered_once(customer, signed_post):
    customer(HELLO)
    customer(says("status"))

    signed_post(whatsapp_webhook(says("status")))

    assert OutboundMessage.objects.filter(idempotency_key="status:wamid.SAYS1").count() == 1


def test_the_status_answer_is_the_runs_not_the_company_rows(customer):
    """The progress query reads the journal: a company row edited by hand does not change it."""
    customer(HELLO)
    customer(CONTRACT, ADDRESS, SELFIE)
    Company.objects.update(status=CompanyStatus.COLLECTING)

    customer(says("status"))

    assert status_reply("wamid.SAYS1") == "Os seus documentos estão em análise pela nossa equipe."


def test_a_customer_whose_first_message_gives_the_cnpj_is_not_asked_for_it_again(customer):
    run = customer(HELLO)

    greeting = OutboundMessage.objects.get(idempotency_key=f"{run.id}:greet").body
    assert (
        greeting.startswith(f"Olá! Recebemos o CNPJ {CNPJ}.") and "escreva o CNPJ" not in greeting
    )


def test_a_customer_who_gave_no_cnpj_is_asked_for_it_in_the_greeting(customer):
    run = customer(NO_CNPJ_HELLO)

    assert (
        "escreva o CNPJ da empresa"
        in OutboundMessage.objects.get(idempotency_key=f"{run.id}:greet").body
    )


def sticker(n: int) -> dict:
    return whatsapp_message(
        f"wamid.STICKER{n}",
        wa_id=CONTRACT["from"],
        type="sticker",
        sticker={"id": f"media-sticker-{n}", "mime_type": "image/webp"},
    )


def test_a_sticker_gets_one_polite_reply_saying_what_we_can_read_however_many_come(customer):
    customer(HELLO)

    customer(sticker(1))
    customer(sticker(2))

    replies = OutboundMessage.objects.filter(idempotency_key__startswith="unreadable:")
    assert replies.count() == 1
    assert "só conseguimos ler textos, documentos em PDF e fotos" in replies.get().body


def test_a_sentence_that_may_mean_a_withdrawal_asks_to_confirm_and_withdraws_nothing(customer):
    customer(HELLO)

    run = customer(says("desisto, cancelar"))

    assert run.status == RunStatus.WAITING
    confirm = OutboundMessage.objects.get(idempotency_key="confirm-withdrawal:wamid.SAYS1")
    assert confirm.body.startswith("Quer cancelar o seu pedido de conta PJ?")
    assert [item["title"] for item in confirm.options["items"]] == ["Confirmar", "Continuar"]


def test_a_sentence_that_says_not_to_cancel_asks_nothing(customer):
    customer(HELLO)

    customer(says("não quero cancelar, só falta a selfie"))

    assert not OutboundMessage.objects.filter(
        idempotency_key__startswith="confirm-withdrawal:"
    ).exists()
