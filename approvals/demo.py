"""A second process that asks compliance, used by the demo data and the reviewer UI's tests.

Onboarding (processes/) is the real user, with documents; this one is a different kind of
case on purpose, so nobody mistakes it for an onboarding case without documents: a
customer asks for a higher daily PIX limit, compliance decides, the limit is raised.
Routed like onboarding: low and medium risk to kyc (and kyc-senior), high to kyc-senior.
"""

from decimal import Decimal, InvalidOperation

from django.utils import formats
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from approvals.panels import register_summary, register_title, register_workflow_label
from approvals.workflow import request_approval
from durable import days, workflow

DEMO_WORKFLOW = "limit_increase"
ROUTES = {"low": ["kyc", "kyc-senior"], "medium": ["kyc", "kyc-senior"], "high": ["kyc-senior"]}


def raise_limit(customer: str, limit: int, idempotency_key: str) -> str:
    """Stands in for the core banking API, which would dedupe on the key."""
    return f"limit-{customer}-{limit}"


@workflow(name=DEMO_WORKFLOW, version=1)
def limit_increase(
    customer: str,
    current: int,
    requested: int,
    risk: str = "low",
    findings: list | None = None,
    deadline_days: float = 3,
    why: str = "",
) -> str:
    decision = request_approval(
        title=f"Raise the daily PIX limit of {customer} from R$ {current:,} to R$ {requested:,}",
        summary={
            "customer": customer,
            "current_daily_limit": current,
            "requested_daily_limit": requested,
            "customer_says": why,
            "findings": findings or [],
        },
        subject=("customer", customer),
        risk=risk,
        timeout=days(deadline_days),
        candidate_groups=ROUTES[risk],
    )
    if decision is None:
        return "expired"
    if decision.approved:
        return workflow.step(raise_limit, customer, requested, idempotency_key=workflow.id)
    return decision.outcome


def money(value) -> str:
    """An amount in reais as the reader writes it: R$ 10.000,00 in pt-BR, R$ 10,000.00 in English.
    Older cases recorded the text ("R$ 10,000"): shown as recorded."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return str(value)
    return "R$ " + formats.number_format(amount, 2, use_l10n=True, force_grouping=True)


def title_shown(case) -> str:
    summary = case.summary or {}
    if not isinstance(summary.get("current_daily_limit"), int):
        return case.title
    return _("Raise the daily PIX limit of %(customer)s from %(current)s to %(requested)s") % {
        "customer": summary.get("customer", ""),
        "current": money(summary["current_daily_limit"]),
        "requested": money(summary.get("requested_daily_limit")),
    }


def summary_rows(case) -> list[tuple[str, object]]:
    summary = case.summary or {}
    return [
        (_("Customer"), summary.get("customer")),
        (_("Current daily limit"), money(summary.get("current_daily_limit", ""))),
        (_("Requested daily limit"), money(summary.get("requested_daily_limit", ""))),
        (_("The customer says"), summary.get("customer_says")),
    ]


register_workflow_label(DEMO_WORKFLOW, gettext_lazy("PIX limit increase"))
register_title(DEMO_WORKFLOW, title_shown)
register_summary(DEMO_WORKFLOW, summary_rows)
