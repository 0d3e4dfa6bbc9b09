"""Small workflows that ask compliance through request_approval, for the approvals tests."""
from approvals.workflow import Decision, request_approval
from durable import days, workflow
from tests.durable.workflows import record


@workflow(name="approval_test")
def needs_approval(company: str, risk: str = "low") -> dict:
    decision = request_approval(
        title=f"Open an account for {company}",
        summary={"company": company, "findings": [{"check": "address", "result": "ok"}]},
        subject=("company", company), risk=risk, timeout=days(3))
    if decision is None:
        workflow.step(record, "escalate")
        return {"outcome": "expired"}
    if decision.approved:
        workflow.step(record, "open_account", idempotency_key=workflow.id)
    return {"outcome": decision.outcome, "by": decision.by, "reason": decision.reason,
            "typed": isinstance(decision, Decision), "decided_at": decision.decided_at}


@workflow(name="approval_loop_test")
def until_documents_suffice(company: str) -> list:
    outcomes = []
    while True:
        decision = request_approval(title=f"Review {company}", subject=f"company:{company}")
        outcomes.append(decision.outcome if decision else "expired")
        if decision is None or not decision.wants_more_documents:
            return outcomes
        workflow.wait_for_signal("documents_received", timeout=days(7))
