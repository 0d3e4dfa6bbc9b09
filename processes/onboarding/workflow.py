"""The onboarding workflow (seed 000): documents over WhatsApp, validation, compliance, account.

No I/O here: this code runs again on every replay. Every effect is a step, every wait
has a deadline and an action when it passes.
"""
from durable import StepFailed, days, workflow
from processes.onboarding import steps
from processes.onboarding.models import CompanyStatus

DOCUMENTS_DEADLINE = days(7)      # the seed's deadline; then one reminder...
DOCUMENTS_GRACE = days(3)         # ...and the case closes if nothing comes in these days
DECISION_DEADLINE = days(3)       # compliance decides in 3 days, else escalation (repeated)


@workflow(name="onboarding", version=1)
def onboarding(customer_id: str) -> str:
    workflow.step(steps.greet, customer_id, idempotency_key=f"{workflow.id}:greet")
    round_ = 0
    if not receive_documents(customer_id, round_):
        return close(customer_id, "no documents")
    result = validate(customer_id)
    while not result.ok:
        round_ += 1
        workflow.step(steps.ask_for_documents, customer_id, result.missing, result.problems,
                      idempotency_key=f"{workflow.id}:ask:{round_}")
        if not receive_documents(customer_id, round_):
            return close(customer_id, "documents never completed")
        result = validate(customer_id)
    workflow.step(steps.set_status, customer_id, CompanyStatus.IN_REVIEW, atomic=True)
    decision = wait_for_compliance_decision(customer_id)
    if not decision.get("approved"):
        workflow.step(steps.set_status, customer_id, CompanyStatus.REJECTED,
                      str(decision.get("reason") or ""), atomic=True)
        workflow.step(steps.notify, customer_id, "Não foi possível abrir a sua conta PJ agora.",
                      idempotency_key=f"{workflow.id}:rejected")
        return "rejected"
    number = workflow.step(steps.create_account, customer_id, str(decision.get("by") or ""),
                           idempotency_key=workflow.id, atomic=True)
    workflow.step(steps.notify, customer_id, f"Conta PJ aberta: {number}.",
                  idempotency_key=f"{workflow.id}:welcome")
    return number


def receive_documents(customer_id: str, round_: int) -> bool:
    """Wait for a document; remind once at the deadline; False when the grace also passes."""
    received = workflow.wait_for_signal("documents_received", timeout=DOCUMENTS_DEADLINE)
    if received is None:
        workflow.step(steps.remind_documents, customer_id,
                      idempotency_key=f"{workflow.id}:remind:{round_}")
        received = workflow.wait_for_signal("documents_received", timeout=DOCUMENTS_GRACE)
        if received is None:
            return False
    workflow.step(steps.store_document_media, received["document_id"])
    return True


def validate(customer_id: str):
    try:
        return workflow.step(steps.validate_documents, customer_id)
    except StepFailed:  # the model never answered: the rules alone decide
        return workflow.step(steps.validate_documents_by_rules, customer_id)


def close(customer_id: str, reason: str) -> str:
    workflow.step(steps.set_status, customer_id, CompanyStatus.CLOSED, reason, atomic=True)
    workflow.step(steps.notify, customer_id, "O seu pedido de conta PJ foi encerrado por falta de documentos.",
                  idempotency_key=f"{workflow.id}:closed")
    return "expired"


def wait_for_compliance_decision(customer_id: str):
    """The compliance decision: a plain ``compliance_decision`` signal for now.

    The approvals app will replace this one function (an approval request and its
    decision). A late decision escalates, again every DECISION_DEADLINE: it is never
    decided on the reviewer's behalf. Payload: {"approved": bool, "by": str, "reason": str}.
    """
    level = 0
    while True:
        decision = workflow.wait_for_signal("compliance_decision", timeout=DECISION_DEADLINE)
        if decision is not None:
            return decision
        level += 1
        workflow.step(steps.escalate_review, customer_id, level, atomic=True)
