"""The company's legal name (issue 36): asked of the customer when the CNPJ registry cannot
give it, checked against the registry when it can, and never the WhatsApp profile name."""

import pytest

from approvals.models import ApprovalAudit, ApprovalRequest
from processes.onboarding.models import Company
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import ADDRESS, CNPJ, CONTRACT, HELLO, SELFIE
from tests.processes.test_onboarding import open_case
from tests.processes.test_onboarding_conversations import says

pytestmark = pytest.mark.django_db

DIGITS = "11222333000181"
QUESTION_KEY = ":ask-legal-name"


@pytest.fixture
def registry_says(settings):
    def say(**record):
        settings.ONBOARDING_FAKE_REGISTRY = {DIGITS: record}

    return say


def questions() -> list[str]:
    return list(
        OutboundMessage.objects.filter(idempotency_key__endswith=QUESTION_KEY).values_list(
            "body", flat=True
        )
    )


def test_a_registry_that_gives_no_legal_name_has_the_customer_asked_once_and_the_case_opens_anyway(
    customer,
):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)
    assert len(questions()) == 1 and "razão social" in questions()[0]
    assert (
        case.title == f"Padaria Boa Massa — CNPJ {CNPJ}"
    )  # the profile name, until a legal name is known
    assert [f["code"] for f in case.summary["findings"] if f["check"] == "legal name"] == [
        "legal_name_missing"
    ]
    assert Company.objects.get().legal_name_asked_at is not None


def test_a_registry_that_gives_the_legal_name_names_the_case_and_asks_nothing(
    registry_says, customer
):
    registry_says(legal_name="PADARIA BOA MASSA LTDA")
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)
    assert questions() == []
    assert case.title == f"PADARIA BOA MASSA LTDA — CNPJ {CNPJ}"
    assert (case.summary["company"], case.summary["whatsapp_profile"]) == (
        "PADARIA BOA MASSA LTDA",
        "Padaria Boa Massa",
    )


def test_the_customers_answer_is_recorded_acknowledged_and_re_checks_the_open_case(customer):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    customer(says("Floricultura Jardim Ltda"))

    company, case = Company.objects.get(), open_case(run.id)
    assert company.legal_name == "Floricultura Jardim Ltda"
    assert OutboundMessage.objects.filter(
        body="Obrigado! Registramos a razão social: Floricultura Jardim Ltda."
    ).exists()
    assert case.title == f"Floricultura Jardim Ltda — CNPJ {CNPJ}"
    assert case.summary["legal_name_given"] == "Floricultura Jardim Ltda"
    assert [f["code"] for f in case.summary["findings"] if f["check"] == "legal name"] == [
        "legal_name_unconfirmed"
    ]
    assert ApprovalAudit.objects.filter(request=case, action="recheck").count() == 1


@pytest.mark.parametrize(
    "text", ["oi", "Obrigado!", "qual o prazo?", "o CNPJ é 11.222.333/0001-81", "ok"]
)
def test_a_greeting_a_question_or_a_cnpj_is_not_taken_for_the_legal_name(customer, text):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        customer(message)

    customer(says(text))

    assert Company.objects.get().legal_name == ""


def test_a_legal_name_that_does_not_match_the_registrys_makes_the_case_high_risk_for_seniors(
    registry_says, customer, settings
):
    registry_says(error="timed out")  # the registry cannot give the name: the customer is asked
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    registry_says(
        legal_name="FLORICULTURA JARDIM LTDA", trade_name="Flores & Cia"
    )  # answers by the re-check

    customer(says("Joana Silva Transportes"))

    case = open_case(run.id)
    assert (case.risk, case.required_approvals) == ("high", 2)
    assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]
    assert (
        "the legal name the customer gave (Joana Silva Transportes) does not match the registry's "
        "(FLORICULTURA JARDIM LTDA)"
    ) in case.summary["risk"]
    assert case.title == f"FLORICULTURA JARDIM LTDA — CNPJ {CNPJ}"


def test_a_legal_name_that_matches_the_registry_but_for_case_and_legal_form_is_no_finding(
    registry_says, customer
):
    registry_says(error="timed out")
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    registry_says(legal_name="FLORICULTURA JARDIM LTDA")

    customer(says("Floricultura Jardim"))

    case = ApprovalRequest.objects.get(pk=open_case(run.id).pk)
    assert (case.risk, case.required_approvals) == ("low", 1)
    assert sorted(case.candidate_groups.values_list("name", flat=True)) == ["kyc", "kyc-senior"]


def test_a_name_said_as_the_legal_name_corrects_an_earlier_answer(customer):
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    customer(says("Floricultura Jardin", 1))

    customer(says("Razão social: Floricultura Jardim Ltda", 2))

    assert Company.objects.get().legal_name == "Floricultura Jardim Ltda"
    assert open_case(run.id).summary["legal_name_given"] == "Floricultura Jardim Ltda"


def test_a_legal_name_given_before_the_case_opens_is_checked_when_it_opens(registry_says, customer):
    registry_says(legal_name="PADARIA BOA MASSA LTDA")
    customer(HELLO)
    customer(says("Razão social: Floricultura Jardim"))
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)
    assert (
        case.risk == "high"
        and "does not match the registry's (PADARIA BOA MASSA LTDA)" in case.summary["risk"]
    )


def test_a_portuguese_reviewer_reads_the_findings_in_portuguese_and_never_their_codes(
    settings, registry_says, customer, ana, client
):
    settings.LANGUAGE_CODE = "pt-br"  # the fixture, not a decorator: both restore on their own
    registry_says(legal_name="PADARIA BOA MASSA LTDA", status="BAIXADA", opened_on="2015-03-02")
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    client.force_login(ana)

    page = client.get(f"/approvals/{open_case(run.id).pk}/").content.decode()

    assert "o cadastro de CNPJ lista a empresa como BAIXADA, não ATIVA" in page
    assert "aberta desde 2015-03-02" in page and "todos presentes" in page
    assert "registry_inactive" not in page and "lists the company as" not in page


class CountingRegistry:
    """The fake registry, counting the questions (set as ONBOARDING_CNPJ_REGISTRY)."""

    asked = 0

    def lookup(self, cnpj_digits):
        from processes.onboarding.registry import FakeRegistry

        CountingRegistry.asked += 1
        return FakeRegistry().lookup(cnpj_digits)


def test_a_legal_name_re_check_reads_the_registrys_answer_the_case_kept(
    settings, registry_says, customer
):
    settings.ONBOARDING_CNPJ_REGISTRY = (
        "tests.processes.test_onboarding_legal_name.CountingRegistry"
    )
    CountingRegistry.asked = 0
    registry_says(legal_name="FLORICULTURA JARDIM LTDA")
    customer(HELLO)
    customer(says("Razão social: Joana Silva Transportes"))
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    asked_at_opening = CountingRegistry.asked

    customer(
        says("Razão social: Floricultura Jardim", 2)
    )  # corrects it: the open case is re-checked

    case = open_case(run.id)
    assert (asked_at_opening, CountingRegistry.asked) == (1, 1)
    assert (case.risk, case.summary["legal_name_given"]) == ("low", "Floricultura Jardim")
