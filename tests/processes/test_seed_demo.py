"""The demo seeds companies, invoices and a batch at different stages, and can run twice."""

import pytest
from django.core.management import call_command

from approvals.models import ApprovalRequest
from durable.models import WorkflowRun
from processes.onboarding.models import Account, Document
from processes.whatsapp.models import InboundMessage, OutboundMessage

pytestmark = pytest.mark.django_db

PROCESSES = ["onboarding", "billing", "reconcile"]


def stages() -> dict[str, str]:
    return dict(
        WorkflowRun.objects.filter(workflow_name__in=PROCESSES).values_list("id", "waiting_for")
    )


def seed(django_capture_on_commit_callbacks, settings, tmp_path):
    """What scripts/run does: reviewer accounts first, then the processes."""
    settings.MEDIA_ROOT = tmp_path
    with django_capture_on_commit_callbacks(execute=True), open("/dev/null", "w") as quiet:
        call_command("seed_approvals_demo", stdout=quiet)
        call_command("seed_demo", stdout=quiet)


def test_seed_demo_leaves_runs_waiting_at_different_points_and_is_idempotent(
    django_capture_on_commit_callbacks, settings, tmp_path
):
    seed(django_capture_on_commit_callbacks, settings, tmp_path)
    first = stages()
    counts = (
        InboundMessage.objects.count(),
        OutboundMessage.objects.count(),
        ApprovalRequest.objects.count(),
    )

    seed(django_capture_on_commit_callbacks, settings, tmp_path)

    assert stages() == first
    assert (
        InboundMessage.objects.count(),
        OutboundMessage.objects.count(),
        ApprovalRequest.objects.count(),
    ) == counts
    assert sorted(w for w in first.values() if w) == [
        "signal:compliance_decision",
        "signal:compliance_decision",
        "signal:compliance_decision",
        "signal:compliance_decision",
        "signal:documents_received",
        "signal:documents_received",
        "signal:paid|voided|due_date_changed",
        "signal:paid|voided|due_date_changed",
        "sleep",
    ]
    assert InboundMessage.objects.filter(status="unsupported").count() == 1
    assert list(Account.objects.values_list("approved_by", flat=True)) == ["ana"]


def test_the_reviewer_queue_gets_onboarding_cases_one_of_them_high_risk(
    django_capture_on_commit_callbacks, settings, tmp_path
):
    seed(django_capture_on_commit_callbacks, settings, tmp_path)

    cases = ApprovalRequest.objects.filter(workflow_name="onboarding", status="pending").order_by(
        "title"
    )

    assert [(case.title.split(" — ")[0], case.risk) for case in cases] == [
        ("CAFE AURORA LTDA", "low"),
        ("CONSTRUTORA HORIZONTE LTDA", "high"),
        ("MERCADO SOL LTDA", "high"),
        ("Transportes Veloz", "high"),
    ]
    documents = Document.objects.filter(
        company__customer_id__in=[case.subject_id for case in cases]
    )
    assert documents.count() == 13 and not documents.filter(file="").exists()  # previewable files


def test_the_demo_shows_a_duplicate_cnpj_and_a_closed_company_to_senior_review(
    django_capture_on_commit_callbacks, settings, tmp_path
):
    seed(django_capture_on_commit_callbacks, settings, tmp_path)
    mercado_sol = ApprovalRequest.objects.get(workflow_name="onboarding", status="approved")

    duplicate = ApprovalRequest.objects.get(
        status="pending", summary__whatsapp_profile="Sol Comércio"
    )
    closed = ApprovalRequest.objects.get(
        status="pending", summary__whatsapp_profile="Construtora Horizonte"
    )

    assert (
        f"Mercado Sol (customer {mercado_sol.subject_id}, approved, case #{mercado_sol.pk})"
        in duplicate.summary["risk"]
    )
    assert "the CNPJ registry lists the company as BAIXADA, not ATIVA" in closed.summary["risk"]
    for case in (duplicate, closed):
        assert list(case.candidate_groups.values_list("name", flat=True)) == ["kyc-senior"]
