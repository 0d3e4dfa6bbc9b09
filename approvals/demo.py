"""A second process that asks compliance, used by the demo data and the reviewer UI's tests.

Onboarding (processes/) is the real user, with documents; this one is a different kind of
case on purpose, so nobody mistakes it for an onboarding case without documents: a
customer asks for a higher daily PIX limit, compliance decides, the limit is raised.
Routed like onboarding: low and medium risk to kyc (and kyc-senior), high to kyc-senior.
"""
from durable import days, workflow
from approvals.workflow import request_approval

DEMO_WORKFLOW = "limit_increase"
ROUTES = {"low": ["kyc", "kyc-senior"], "medium": ["kyc", "kyc-senior"], "high": ["kyc-senior"]}


def raise_limit(customer: str, limit: int, idempotency_key: str) -> str:
    """Stands in for the core banking API, which would dedupe on the key."""
    return f"limit-{customer}-{limit}"


@workflow(name=DEMO_WORKFLOW, version=1)
def limit_increase(customer: str, current: int, requested: int, risk: str = "low",
                   findings: list | None = None, deadline_days: float = 3, why: str = "") -> str:
    decision = request_approval(
        title=f"Raise the daily PIX limit of {customer} from R$ {current:,} to R$ {requested:,}",
        summary={"customer": customer, "current_daily_limit": f"R$ {current:,}",
                 "requested_daily_limit": f"R$ {requested:,}", "customer_says": why,
                 "findings": findings or []},
        subject=("customer", customer), risk=risk, timeout=days(deadline_days),
        candidate_groups=ROUTES[risk])
    if decision is None:
        return "expired"
    if decision.approved:
        return workflow.step(raise_limit, customer, requested, idempotency_key=workflow.id)
    return decision.outcome
