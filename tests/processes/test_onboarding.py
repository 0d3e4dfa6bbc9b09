"""Onboarding end to end through the signed WhatsApp webhook and the compliance reviewer's
decision (approvals app), driven in-process."""

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from approvals.errors import ApprovalHeld, NotAllowed, ReasonRequired
from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.services import approval_decide, approval_hold_override
from durable import days
from durable.models import JournalEntry, LimitTicket, RunStatus
from durable.testing import drive
from processes.onboarding.models import Account, Company, CompanyStatus, Document, DocumentKind
from processes.onboarding.steps import ReviewFacts
from processes.onboarding.validation import ValidationResult
from processes.onboarding.workflow import review_risk
from processes.whatsapp.models import OutboundMessage
from tests.processes.conftest import (
    ADDRESS,
    CNPJ,
    CONTRACT,
    HELLO,
    NEW_CONTRACT,
    PHONE,
    SELFIE,
    document,
    whatsapp_message,
    whatsapp_webhook,
)

pytestmark = pytest.mark.django_db


class SimulatedCrash(BaseException):
    """The process dies: not an error the step's retry policy would catch."""


def open_case(run_id: str) -> ApprovalRequest:
    return ApprovalRequest.objects.get(
        run_id=run_id, status__in=[ApprovalStatus.PENDING, ApprovalStatus.CLAIMED]
    )


def decide(reviewer, run_id: str, outcome: str, reason: str = ""):
    """A reviewer decides the run's open case (as the reviewer UI does), then the run advances."""
    approval_decide(open_case(run_id).pk, actor=reviewer, outcome=outcome, reason=reason)
    return drive(run_id)


def sent_keys(run_id: str) -> list[str]:
    return [
        key.removeprefix(run_id + ":")
        for key in OutboundMessage.objects.order_by("created_at", "pk").values_list(
            "idempotency_key", flat=True
        )
    ]


def test_full_onboarding_asks_for_each_missing_document_then_a_reviewer_opens_the_account(
    customer, clock, ana
):
    run = customer(HELLO)
    assert run.waiting_for == "signal:documents_received"
    customer(CONTRACT)
    clock.advance(days(2))
    customer(ADDRESS)
    run = customer(SELFIE)
    assert run.waiting_for == "signal:compliance_decision"
    assert Company.objects.get().status == CompanyStatus.IN_REVIEW

    run = decide(ana, run.id, "approve")
    drive(run.id)  # a later replay opens nothing more

    company = Company.objects.get()
    assert run.status == RunStatus.COMPLETED
    assert run.result == company.account.number
    assert Account.objects.count() == 1
    assert (company.status, company.account.approved_by) == (CompanyStatus.APPROVED, "ana")
    assert sent_keys(run.id) == [
        "greet",
        "ask:1",
        "ask:2",
        "under-review:1",
        "ask-legal-name",
        "welcome",
    ]
    asks = OutboundMessage.objects.filter(idempotency_key__contains=":ask:").order_by("pk")
    assert ["comprovante de endereço" in m.body and "selfie" in m.body for m in asks] == [
        True,
        False,
    ]


def test_the_compliance_case_names_the_company_its_documents_and_the_findings(in_review):
    case = open_case(in_review.id)

    assert case.title == f"Padaria Boa Massa — CNPJ {CNPJ}"
    assert case.idempotency_key == f"{in_review.id}:review:1:0"
    assert (case.subject, case.risk, case.required_approvals) == (
        f"company:{Company.objects.get().customer_id}",
        "low",
        1,
    )
    assert case.summary["cnpj"] == CNPJ and case.summary["whatsapp"] == PHONE
    assert "contrato.pdf" in case.summary["documents_received"]
    assert [(f["check"], f["result"]) for f in case.summary["findings"]] == [
        ("required documents (rules)", "all present"),
        ("CNPJ registry", "ATIVA — names not given"),
        (
            "legal name",
            "the legal name is not known: the registry does "
            "not give it and the customer was asked for it",
        ),
    ]


def test_a_low_risk_review_is_routed_to_kyc_and_kyc_senior(in_review):
    case = open_case(in_review.id)

    assert sorted(case.candidate_groups.values_list("name", flat=True)) == ["kyc", "kyc-senior"]


def test_a_high_risk_review_is_routed_to_kyc_senior_only(customer, clock):
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    clock.advance(days(1))  # asked for the CNPJ, never answered

    case = open_case(drive(run.id).id)

    assert case.risk == "high"
    assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]


def no_cnpj_case(customer, clock) -> ApprovalRequest:
    for message in (CONTRACT, ADDRESS, SELFIE):
        run = customer(message)
    clock.advance(days(1))  # asked for the CNPJ, never answered
    return open_case(drive(run.id).id)


def test_a_case_without_a_cnpj_cannot_be_approved_and_says_why(customer, clock, ana):
    case = no_cnpj_case(customer, clock)

    with pytest.raises(ApprovalHeld, match="no valid CNPJ"):
        approval_decide(case.pk, actor=ana, outcome="approve")

    assert not Account.objects.exists() and not case.decisions.exists()
    approval_decide(
        case.pk, actor=ana, outcome="reject", reason="no CNPJ"
    )  # rejecting stays possible


def test_without_a_cnpj_only_a_supervisors_override_lets_two_reviewers_approve(
    customer, clock, ana, bruno, sofia
):
    case = no_cnpj_case(customer, clock)
    assert (case.risk, case.required_approvals) == ("high", 2)
    assert "CNPJ not given" in case.title

    approval_hold_override(
        case.pk, actor=sofia, reason="CNPJ confirmed by phone with the registry, ticket 88"
    )
    run = decide(ana, case.run_id, "approve")
    assert run.waiting_for == "signal:compliance_decision"  # one approval is not enough
    run = decide(bruno, run.id, "approve")

    assert run.status == RunStatus.COMPLETED
    assert Account.objects.get().approved_by == "ana, bruno"
    row = case.audit.get(action="override_hold")
    assert (row.actor, row.reason) == (
        "sofia",
        "CNPJ confirmed by phone with the registry, ticket 88",
    )
    assert row.detail["holds"] == ["processes.onboarding.recheck.cnpj_missing"]


def test_a_hold_override_needs_a_supervisor_and_a_reason(customer, clock, ana, sofia):
    case = no_cnpj_case(customer, clock)

    with pytest.raises(NotAllowed):
        approval_hold_override(case.pk, actor=ana, reason="I checked it")
    with pytest.raises(ReasonRequired):
        approval_hold_override(case.pk, actor=sofia, reason=" ")

    assert not case.audit.filter(action="override_hold").exists()


def welcome_priority(run_id: str) -> int:
    """The priority the welcome message took its turn in the WhatsApp sending line with."""
    welcome = JournalEntry.objects.get(run_id=run_id, idempotency_key=f"{run_id}:welcome")
    return LimitTicket.objects.get(
        run_id=run_id, limit_name="whatsapp-send", position=welcome.position
    ).priority


def test_a_high_risk_case_goes_ahead_in_the_whatsapp_sending_line(
    customer, clock, ana, bruno, sofia
):
    case = no_cnpj_case(customer, clock)  # no CNPJ: high risk
    approval_hold_override(case.pk, actor=sofia, reason="confirmed by phone")
    run = decide(ana, case.run_id, "approve")
    run = decide(bruno, run.id, "approve")

    assert run.status == RunStatus.COMPLETED
    assert welcome_priority(run.id) == 7


def test_a_low_risk_case_sends_at_its_runs_priority(in_review, ana):
    run = decide(ana, in_review.id, "approve")

    assert run.status == RunStatus.COMPLETED
    assert welcome_priority(run.id) == 5


@pytest.mark.parametrize(
    "cnpj_valid, problems, risk",
    [
        (True, [], "low"),
        (False, [], "high"),
        (True, ["selfie.pdf: application/pdf is not accepted"], "high"),
    ],
)
def test_risk_is_high_without_a_valid_cnpj_or_with_validator_problems(cnpj_valid, problems, risk):
    facts = ReviewFacts(customer_id="c-1", name="X", cnpj="", cnpj_valid=cnpj_valid, whatsapp="55")

    assert review_risk(facts, ValidationResult(ok=True, problems=problems))[0] == risk


def test_more_documents_sends_the_reviewers_request_and_goes_back_to_the_documents_loop(
    customer, in_review, ana
):
    run = decide(ana, in_review.id, "more_documents", "Envie o contrato social atualizado")

    assert run.waiting_for == "signal:documents_received"
    assert Company.objects.get().status == CompanyStatus.COLLECTING
    request = OutboundMessage.objects.get(idempotency_key=f"{run.id}:more:1")
    assert "Envie o contrato social atualizado" in request.body

    run = customer(NEW_CONTRACT)

    first, second = ApprovalRequest.objects.filter(run_id=run.id).order_by("pk")
    assert run.waiting_for == "signal:compliance_decision"
    assert first.status == ApprovalStatus.RETURNED
    assert (second.status, second.idempotency_key) == (
        ApprovalStatus.PENDING,
        f"{run.id}:review:2:0",
    )
    assert "contrato-2024.pdf" in second.summary["documents_received"]
    run = decide(ana, run.id, "approve")
    assert run.status == RunStatus.COMPLETED
    assert Account.objects.count() == 1


def test_a_rejection_closes_the_case_without_an_account(in_review, ana):
    run = decide(ana, in_review.id, "reject", "CNPJ inapto")

    company = Company.objects.get()
    assert run.result == "rejected"
    assert not Account.objects.exists()
    assert (company.status, company.status_reason) == (CompanyStatus.REJECTED, "CNPJ inapto")
    assert sent_keys(run.id)[-1] == "rejected"


def test_a_late_decision_escalates_and_opens_a_new_case_per_level(in_review, clock, bruno):
    clock.advance(days(3))
    drive(in_review.id)
    clock.advance(days(3))
    run = drive(in_review.id)

    cases = list(ApprovalRequest.objects.filter(run_id=run.id).order_by("pk"))
    assert [c.status for c in cases] == [
        ApprovalStatus.EXPIRED,
        ApprovalStatus.EXPIRED,
        ApprovalStatus.PENDING,
    ]
    assert [c.idempotency_key.removeprefix(run.id) for c in cases] == [
        ":review:1:0",
        ":review:1:1",
        ":review:1:2",
    ]
    assert cases[-1].title.endswith("(escalated, level 2)")
    assert Company.objects.get().escalations == 2
    assert run.status == RunStatus.WAITING and not Account.objects.exists()

    run = decide(bruno, run.id, "approve")

    assert run.status == RunStatus.COMPLETED
    assert Account.objects.get().approved_by == "bruno"


def test_no_documents_brings_a_reminder_then_closes_the_case(customer, clock):
    run = customer(HELLO)

    clock.advance(days(7))
    drive(run.id)
    clock.advance(days(3))
    run = drive(run.id)

    assert run.result == "expired"
    assert Company.objects.get().status == CompanyStatus.CLOSED
    assert sent_keys(run.id) == ["greet", "remind:0", "closed"]


def test_a_document_after_the_reminder_keeps_the_case_open(customer, clock):
    run = customer(HELLO)
    clock.advance(days(7))
    drive(run.id)  # the sweep wakes the run at the deadline: the reminder goes out

    run = customer(CONTRACT)

    assert run.status == RunStatus.WAITING
    assert sent_keys(run.id) == ["greet", "remind:0", "ask:1"]


def test_a_crash_during_account_creation_creates_one_account(
    in_review, clock, monkeypatch, settings, ana
):
    approval_decide(open_case(in_review.id).pk, actor=ana, outcome="approve")
    original_save = Account.save

    def save_then_die(account, *args, **kwargs):
        original_save(account, *args, **kwargs)
        monkeypatch.setattr(Account, "save", original_save)
        raise SimulatedCrash("power lost right after the account row was written")

    monkeypatch.setattr(Account, "save", save_then_die)
    with pytest.raises(SimulatedCrash):
        drive(in_review.id)
    clock.advance(settings.DURABLE_LEASE_SECONDS + 1)  # the dead worker's lease expires
    run = drive(in_review.id)

    assert run.status == RunStatus.COMPLETED
    assert Account.objects.count() == 1
    assert run.result == Account.objects.get().number


def test_the_first_valid_cnpj_the_customer_writes_is_recorded(customer):
    customer(whatsapp_message("wamid.T1", wa_id=PHONE, text="CNPJ 11.222.333/0001-82, ops"))
    customer(whatsapp_message("wamid.T2", wa_id=PHONE, text="o certo: 11222333000181"))
    customer(whatsapp_message("wamid.T3", wa_id=PHONE, text="e o da matriz 45.997.418/0001-53"))

    assert Company.objects.get().cnpj == CNPJ


def test_a_document_an_operator_attached_and_signalled_through_the_api_completes_the_set(
    customer, clock
):
    """The example of docs/api.md: a selfie the customer e-mailed, attached in the admin."""
    for message in (HELLO, CONTRACT, ADDRESS):
        run = customer(message)
    assert run.waiting_for == "signal:documents_received"  # the selfie is missing
    selfie = Document.objects.create(
        company=Company.objects.get(wa_id=PHONE),
        kind=DocumentKind.SELFIE,
        media_id="email-2026-12-01",
        mime_type="image/jpeg",
        file_name="selfie.jpg",
    )
    api = APIClient()
    api.force_authenticate(User.objects.create_superuser("ops", password="pw-unused-123"))

    response = api.post(
        f"/api/runs/{run.id}/signals/",
        {"name": "documents_received", "payload": {"document_id": selfie.pk}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="email-2026-12-01",
    )
    drive(run.id)
    clock.advance(31)  # the quiet period: the batch closes
    run = drive(run.id)

    assert response.status_code == 201, response.content
    assert run.waiting_for == "signal:compliance_decision"
    assert open_case(run.id).title.startswith(Company.objects.get(wa_id=PHONE).name)


def test_the_case_page_says_why_approve_is_off_and_offers_the_supervisor_an_override(
    customer, clock, ana, sofia, client
):
    case = no_cnpj_case(customer, clock)
    client.force_login(ana)
    reviewer_page = client.get(f"/approvals/{case.pk}/").content.decode()
    client.force_login(sofia)
    supervisor_page = client.get(f"/approvals/{case.pk}/").content.decode()

    assert "the company has no valid CNPJ: an account cannot be opened without one" in reviewer_page
    assert 'data-testid="override-hold"' not in reviewer_page
    assert 'data-testid="override-hold"' in supervisor_page

    response = client.post(
        f"/approvals/{case.pk}/override-hold/", {"reason": "confirmed by phone, ticket 88"}
    )

    assert response.status_code == 302
    client.force_login(ana)
    after = client.get(f"/approvals/{case.pk}/").content.decode()
    assert (
        "an account cannot be opened without one" not in after
        and 'data-testid="approve-holds"' not in after
    )


def test_a_reviewer_cannot_post_the_supervisors_override(customer, clock, ana, client):
    case = no_cnpj_case(customer, clock)
    client.force_login(ana)

    response = client.post(f"/approvals/{case.pk}/override-hold/", {"reason": "I checked it"})

    assert response.status_code == 403
    assert not case.audit.filter(action="override_hold").exists()


OTHER_PHONE = "5511977776666"


def test_a_cnpj_another_company_already_gave_makes_the_case_high_risk_for_seniors_naming_it(
    customer, in_review, ana, signed_post, clock
):
    first = decide(ana, in_review.id, "approve")
    first_case = ApprovalRequest.objects.get(run_id=first.id)
    sent = [
        whatsapp_message("wamid.O-HELLO", wa_id=OTHER_PHONE, text=f"Oi, CNPJ {CNPJ}"),
        document("wamid.O-CONTRACT", "Contrato social", filename="c.pdf", wa_id=OTHER_PHONE),
        document("wamid.O-ADDRESS", "comprovante de endereço", filename="e.pdf", wa_id=OTHER_PHONE),
        document("wamid.O-SELFIE", "", type="image", wa_id=OTHER_PHONE),
    ]
    for message in sent:
        assert signed_post(whatsapp_webhook(message)).status_code == 200
    other = Company.objects.get(wa_id=OTHER_PHONE)
    drive(other.run_id)
    clock.advance(31)
    drive(other.run_id)

    case = open_case(other.run_id)
    assert (case.risk, case.required_approvals) == ("high", 2)
    assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]
    first_company = Company.objects.get(wa_id=PHONE)
    assert (
        "the CNPJ is already held by Padaria Boa Massa (customer "
        f"{first_company.customer_id}, approved, case #{first_case.pk})"
    ) in case.summary["risk"]


def test_documents_under_review_are_read_only_in_the_admin(in_review, client):
    from django.contrib.auth.models import User

    document = Company.objects.get().documents.first()
    client.force_login(User.objects.create_superuser("root", password="pw-unused-123"))

    response = client.post(
        f"/admin/processes/document/{document.pk}/change/",
        {
            "company": document.company_id,
            "kind": document.kind,
            "sha256": "f" * 64,
            "media_id": "other",
            "mime_type": "application/pdf",
            "size": 1,
            "file_name": "forged.pdf",
        },
    )
    delete = client.post(f"/admin/processes/document/{document.pk}/delete/", {"post": "yes"})

    fresh = Document.objects.get(pk=document.pk)
    assert response.status_code == 302 and delete.status_code == 403
    assert (fresh.sha256, fresh.media_id, fresh.file_name) == (
        document.sha256,
        document.media_id,
        document.file_name,
    )


def test_a_reviewer_who_added_evidence_in_the_admin_may_not_decide_the_case(in_review, ana, client):
    from django.contrib.auth.models import Permission

    from approvals.errors import SegregationOfDuties

    ana.is_staff = True
    ana.save(update_fields=["is_staff"])
    ana.user_permissions.add(
        *Permission.objects.filter(
            content_type__app_label="processes", codename__in=["add_document", "view_document"]
        )
    )
    company = Company.objects.get()
    client.force_login(ana)
    added = client.post(
        "/admin/processes/document/add/",
        {
            "company": company.pk,
            "kind": "selfie",
            "media_id": "by-hand-1",
            "mime_type": "image/jpeg",
            "file_name": "selfie-nova.jpg",
            "size": 10,
            "sha256": "a" * 64,
            "caption": "",
            "message_id": "",
        },
    )
    assert added.status_code == 302

    for outcome, reason in (
        ("approve", ""),
        ("reject", "forged"),
        ("more_documents", "send it again"),
    ):
        with pytest.raises(SegregationOfDuties, match="added document .* in the admin"):
            approval_decide(open_case(in_review.id).pk, actor=ana, outcome=outcome, reason=reason)


@pytest.fixture
def registry_says(settings):
    """The fake registry's table: what it answers for the test CNPJ."""

    def say(**record):
        settings.ONBOARDING_FAKE_REGISTRY = {"11222333000181": record}

    return say


def test_the_case_shows_what_the_cnpj_registry_says_of_the_company(registry_says, customer):
    registry_says(
        legal_name="PADARIA BOA MASSA LTDA",
        trade_name="Boa Massa",
        status="ATIVA",
        opened_on="2015-03-02",
        main_activity="Fabricação de produtos de panificação",
    )
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)

    assert [f["result"] for f in case.summary["findings"] if f["check"] == "CNPJ registry"] == [
        "ATIVA — PADARIA BOA MASSA LTDA / Boa Massa",
        "open since 2015-03-02",
        "main activity: Fabricação de produtos de panificação",
    ]
    assert case.title == f"PADARIA BOA MASSA LTDA — CNPJ {CNPJ}"
    assert (case.summary["company"], case.summary["whatsapp_profile"]) == (
        "PADARIA BOA MASSA LTDA",
        "Padaria Boa Massa",
    )
    assert case.risk == "low"
    assert not OutboundMessage.objects.filter(idempotency_key__endswith=":ask-legal-name").exists()


@pytest.mark.parametrize("status", ["BAIXADA", "SUSPENSA", "INAPTA"])
def test_a_cnpj_the_registry_does_not_list_as_active_makes_the_case_high_risk_for_seniors(
    registry_says, customer, status
):
    registry_says(legal_name="PADARIA BOA MASSA LTDA", status=status)
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)

    assert (case.risk, case.required_approvals) == ("high", 2)
    assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]
    assert f"the CNPJ registry lists the company as {status}, not ATIVA" in case.summary["risk"]


def test_a_registry_that_cannot_be_asked_leaves_the_case_high_risk_saying_so(settings, customer):
    settings.ONBOARDING_CNPJ_REGISTRY = "processes.onboarding.registry.HttpRegistry"
    settings.ONBOARDING_CNPJ_REGISTRY_URL = "http://not-https.invalid"  # refused before any request
    for message in (HELLO, CONTRACT, ADDRESS, SELFIE):
        run = customer(message)

    case = open_case(run.id)

    assert case.risk == "high" and "the CNPJ registry could not be asked" in case.summary["risk"]
