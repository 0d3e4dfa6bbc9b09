"""A CNPJ, legal name or WhatsApp number that changes while a compliance case is open re-runs
that case's check.

The case is brought up to date at once (CNPJ, title, risk, number; approvals given on the
old data no longer count), whichever way the change came: the customer's text, an operator
in the admin, WhatsApp's notice of a new number, or a case that opened on facts read before
the change. Until the case shows the company's CNPJ, a hold keeps it from being approved.
"""

from django.utils.translation import gettext as _

from approvals import services as approvals
from approvals.holds import register_approval_hold
from approvals.hooks import case_opened
from approvals.models import ApprovalRequest
from approvals.selectors import approvals_open_of_run
from processes.onboarding import registry, steps
from processes.onboarding.cnpj import cnpj_valid
from processes.onboarding.models import Company
from processes.onboarding.validation import ValidationResult
from processes.onboarding.workflow import REVIEW_GROUPS, case_summary, case_title, review_risk

WORKFLOW = "onboarding"
NOT_GIVEN = "not given"
# The findings a re-check writes anew; the validator's (documents, problems) stay as recorded.
RECOMPUTED_CHECKS = {registry.REGISTRY_CHECK, registry.LEGAL_NAME_CHECK, "risk"}


def shown_cnpj(cnpj: str) -> str:
    """A CNPJ as a case's summary writes it."""
    return cnpj or NOT_GIVEN


def case_recheck(case: ApprovalRequest, *, actor: str, reason: str) -> ApprovalRequest:
    """Re-run the check of an open onboarding case if the company's CNPJ, the legal name it
    gave or its WhatsApp identity is not the one the case shows.

    The same rules as the workflow's (``review_risk``, ``case_findings``, ``case_title``) on
    the company as it is now and the validator's findings the case recorded; risk, required
    approvals and routing are recomputed together. Nothing changes when the case is current,
    so calling it twice is harmless.
    """
    if "cnpj" not in case.summary:  # not a case the workflow's review round opened
        return case
    facts = steps.describe_for_review(case.subject_id)
    shown = (
        case.summary["cnpj"],
        case.summary.get("legal_name_given", ""),
        case.summary.get("whatsapp"),
    )
    if shown == (shown_cnpj(facts.cnpj), facts.legal_name, facts.whatsapp):
        return case
    recorded = case.summary.get("findings", [])
    problems = [item.get("result", "") for item in recorded if item.get("check") == "problem"]
    validator = [item for item in recorded if item.get("check") not in RECOMPUTED_CHECKS]
    record = registry_answer(case, facts)
    risk, reasons = review_risk(facts, ValidationResult(ok=True, problems=problems), record)
    findings = (
        validator
        + registry.case_findings(record)
        + registry.legal_name_notes(facts.legal_name, record)
    )
    summary = {
        **case.summary,
        **case_summary(facts, case.subject_id, record, findings + reasons, reasons),
    }
    title = case_title(
        facts, case.subject_id, int(case.summary.get("escalation_level") or 0), record
    )
    return approvals.approval_recheck(
        case.pk,
        actor=actor,
        title=title,
        summary=summary,
        risk=risk,
        reason=reason,
        candidate_groups=REVIEW_GROUPS[risk],
    )


def registry_answer(case: ApprovalRequest, facts: steps.ReviewFacts) -> dict:
    """What the registry says of the company's CNPJ as it is now: the answer the case recorded
    when its CNPJ has not changed and the registry did answer then, else asked again (a new
    CNPJ, a registry that could not be asked, a case recorded before it kept the answer)."""
    kept = case.summary.get("registry")
    if (
        case.summary["cnpj"] == shown_cnpj(facts.cnpj)
        and isinstance(kept, dict)
        and not kept.get("error")
    ):
        return kept
    return steps.cnpj_registry_lookup(case.subject_id)  # ({} without a valid CNPJ)


def company_cases_recheck(company: Company, *, actor: str, reason: str) -> list[ApprovalRequest]:
    """After the company's CNPJ, legal name or number changed: re-check every case its run waits
    on."""
    return [
        case_recheck(case, actor=actor, reason=reason)
        for case in approvals_open_of_run(company.run_id)
    ]


def cnpj_not_checked(case: ApprovalRequest) -> list[str]:
    """Hold: a case that shows another CNPJ than the company has cannot be approved."""
    company = Company.objects.filter(customer_id=case.subject_id).first()
    if company is None or "cnpj" not in case.summary:
        return []
    current, shown = shown_cnpj(company.cnpj), case.summary["cnpj"]
    if current == shown:
        return []
    return [
        f"the company's CNPJ is now {current}, but this case was checked with {shown}: "
        "it must be re-checked first"
    ]


def cnpj_missing(case: ApprovalRequest) -> list[str]:
    """Hold: no account opens for a company without a valid CNPJ (a supervisor's override
    with a reason is the only way past it)."""
    company = Company.objects.filter(customer_id=case.subject_id).first()
    if company is None or cnpj_valid(company.cnpj):
        return []
    return [_("the company has no valid CNPJ: an account cannot be opened without one")]


def recheck_on_opening(sender, case: ApprovalRequest, **kwargs) -> None:
    """A case opened on facts read before a change (an escalation reuses its round's facts)."""
    if case.workflow_name == WORKFLOW:
        case_recheck(
            case,
            actor="system (re-check at opening)",
            reason="the company changed after this review round read it",
        )


register_approval_hold(WORKFLOW, cnpj_not_checked)
register_approval_hold(WORKFLOW, cnpj_missing, overridable=True)
case_opened.connect(recheck_on_opening, dispatch_uid="onboarding.recheck_on_opening")
