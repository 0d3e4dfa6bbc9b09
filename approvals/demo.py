"""A small process that asks compliance, used by the demo data and the reviewer UI's tests.

Onboarding (processes/) is the real user; this stand-in keeps the demo's varied risks and
deadlines and needs nothing from processes/: open a case, wait for the decision, open
the account, or return what compliance said.
"""
from durable import days, workflow
from approvals.workflow import request_approval

DEMO_WORKFLOW = "approval_demo"


def open_account(company: str, idempotency_key: str) -> str:
    """Stands in for the bank's account API, which would dedupe on the key."""
    return f"acct-{company}"


@workflow(name=DEMO_WORKFLOW, version=1)
def approval_demo(company: str, risk: str = "low", findings: list | None = None,
                  deadline_days: float = 3) -> str:
    decision = request_approval(
        title=f"Open a business account for {company}",
        summary={"company": company, "requested_product": "business account",
                 "findings": findings or []},
        subject=("company", company), risk=risk, timeout=days(deadline_days))
    if decision is None:
        return "expired"
    if decision.approved:
        return workflow.step(open_account, company, idempotency_key=workflow.id)
    return decision.outcome
