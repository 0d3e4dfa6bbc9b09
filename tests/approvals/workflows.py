"""Small workflows that ask compliance through request_approval, for the approvals tests."""

# Titles are in Portuguese, as a deployment's workflows write them for its team: the pages' language
# checks read them.
from approvals.workflow import Decision, request_approval
from durable import Retry, days, workflow
from tests.durable.workflows import record


@workflow(name="approval_test")
def needs_approval(company: str, risk: str = "low") -> dict:
    decision = request_approval(
        title=f"Abrir conta para {company}",
        summary={"company": company, "findings": [{"check": "address", "result": "ok"}]},
        subject=("company", company),
        risk=risk,
        timeout=days(3),
    )
    if decision is None:
        workflow.step(record, "escalate")
        return {"outcome": "expired"}
    if decision.approved:
        workflow.step(record, "open_account", idempotency_key=workflow.id)
    return {
        "outcome": decision.outcome,
        "by": decision.by,
        "reason": decision.reason,
        "typed": isinstance(decision, Decision),
        "decided_at": decision.decided_at,
    }


@workflow(name="approval_acted_then_waits")
def acted_then_waits(company: str) -> str:
    """Acts on the decision (an account), then waits: a cancel now comes after the effect."""
    decision = request_approval(title=f"Abrir conta para {company}", subject=("company", company))
    workflow.step(record, "open_account", idempotency_key=workflow.id)
    workflow.wait_for_signal("welcome_sent", timeout=days(1))
    return decision.outcome


@workflow(name="approval_routed_test")
def routed_approval(company: str, risk: str = "low", groups: list | None = None) -> str:
    decision = request_approval(
        title=f"Raise the limit of {company}",
        subject=("customer", company),
        risk=risk,
        timeout=days(3),
        candidate_groups=groups,
    )
    return "expired" if decision is None else decision.outcome


@workflow(name="approval_loop_test")
def until_documents_suffice(company: str) -> list:
    outcomes = []
    while True:
        decision = request_approval(title=f"Review {company}", subject=f"company:{company}")
        outcomes.append(decision.outcome if decision else "expired")
        if decision is None or not decision.wants_more_documents:
            return outcomes
        workflow.wait_for_signal("documents_received", timeout=days(7))


FETCH_ATTEMPTS: dict[str, int] = {}


class RegistryDown(Exception):
    pass


def fetch_registry(company: str) -> str:
    """Fails the first time for each company, so the run fails until an operator retries it."""
    FETCH_ATTEMPTS[company] = FETCH_ATTEMPTS.get(company, 0) + 1
    if FETCH_ATTEMPTS[company] == 1:
        raise RegistryDown("the company registry is down")
    return "active"


@workflow(name="approval_after_retry_test")
def approval_after_a_failed_lookup(company: str) -> str:
    status = workflow.step(fetch_registry, company, retry=Retry(max_attempts=1))
    decision = request_approval(
        title=f"Abrir conta para {company} ({status})", subject=("company", company)
    )
    return decision.outcome if decision else "expired"
