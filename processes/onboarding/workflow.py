"""The onboarding workflow (seed 000): documents over WhatsApp, validation, compliance, account.

No I/O here: this code runs again on every replay. Every effect is a step, every wait
has a deadline and an action when it passes.
"""

from dataclasses import dataclass, field

from approvals.workflow import Decision, request_approval
from durable import StepFailed, days, seconds, workflow
from processes import conf
from processes.onboarding import registry, steps
from processes.onboarding.findings import finding
from processes.onboarding.models import CompanyStatus
from processes.onboarding.validation import ValidationResult
from processes.whatsapp.limits import LLM, LLM_QUEUE, SEND

DOCUMENTS_DEADLINE = days(7)  # the seed's deadline; then one reminder...
DOCUMENTS_GRACE = days(3)  # ...and the case closes if nothing comes in these days
DECISION_DEADLINE = days(3)  # compliance decides in 3 days, else escalation (repeated)
# Who may take a review: juniors (kyc) the low-risk ones, seniors (kyc-senior) every one.
KYC_GROUP, KYC_SENIOR_GROUP = "kyc", "kyc-senior"
REVIEW_GROUPS = {"low": [KYC_GROUP, KYC_SENIOR_GROUP], "high": [KYC_SENIOR_GROUP]}
DOCUMENTS_SIGNAL = "documents_received"
# Change id (docs/versioning.md): a round takes the whole batch the customer sent, and what is
# buffered is drained before every ask. Runs whose journal predates it keep the one-signal path.
BATCHES = "documents-in-batches"
ASK_CNPJ = "ask-cnpj"  # no valid CNPJ when the set is complete: ask once, wait a while
CNPJ_SIGNAL = "cnpj_received"
UNDER_REVIEW = (
    "under-review-notice"  # the customer hears the set is complete, once per review round
)
UNDER_REVIEW_TEXT = "Recebemos todos os documentos. O seu pedido de conta PJ está em análise."
GOODBYE_TEXT = "Pedido de conta PJ encerrado, como pediu. Se quiser recomeçar, é só escrever."
# The run publishes its human status and the company's CNPJ as search attributes, so
# operators find a customer's run by CNPJ in the admin and the API. Each publication is
# guarded where it stands: a run whose journal has something else there keeps its old path.
STAGES = "stage-attributes"
# Each review round asks the CNPJ registry (processes/onboarding/registry.py) before the case
# opens; runs recorded before it keep their journal.
CNPJ_REGISTRY = "cnpj-registry"
# When the registry gives no legal name and the customer has not written one, the customer is
# asked for it (once per run) as the case opens; the answer re-checks the open case.
LEGAL_NAME = "ask-legal-name"
# A high-risk case goes ahead of the others in the WhatsApp sending line once its risk is
# known (a step's priority changes no journal: recorded runs replay the same).
HIGH_RISK_PRIORITY = 7


@dataclass
class Progress:
    """Where the request stands, as the body knows it. The ``progress`` query answers it
    (the bot's reply when a customer asks "status"): read from the run's journal by replay,
    never from a copy kept in another table."""

    stage: str = "starting"
    missing: list[str] = field(default_factory=list)
    # The priority of its messages from the first review on: HIGH_RISK_PRIORITY for a
    # high-risk case, None (the run's own) otherwise. Not part of the answer.
    priority: int | None = None

    def answer(self) -> dict:
        return {"stage": self.stage, "missing": list(self.missing)}


def publish_stage(progress: Progress, stage: str, **more) -> None:
    """``stage`` is what operators read as the run's status ("awaiting selfie", "in review")."""
    progress.stage = stage
    if workflow.patched(STAGES):
        workflow.set_attributes(stage=stage, **more)


@workflow(name="onboarding", version=1)
def onboarding(customer_id: str) -> str:
    """The customer may withdraw at any wait (a graceful cancel, processes/onboarding/services.py):
    one goodbye, the company marked withdrawn; the engine then cancels any open case."""
    progress = Progress()
    workflow.on_query("progress", progress.answer)
    try:
        return onboard(customer_id, progress)
    except workflow.Cancelled as cancelled:
        workflow.step(
            steps.set_status, customer_id, CompanyStatus.WITHDRAWN, cancelled.reason, atomic=True
        )
        workflow.step(
            steps.notify,
            customer_id,
            GOODBYE_TEXT,
            idempotency_key=f"{workflow.id}:bye",
            limit=SEND,
        )
        publish_stage(progress, "withdrawn")
        return "withdrawn"  # the run still ends cancelled: the cancel was asked for


def onboard(customer_id: str, progress: Progress) -> str:
    workflow.step(steps.greet, customer_id, idempotency_key=f"{workflow.id}:greet", limit=SEND)
    publish_stage(progress, "awaiting documents")
    round_ = 0
    if not receive_documents(customer_id, round_):
        return close(customer_id, "no documents", progress)
    review = 0
    cnpj_asked = False
    sent_back = None  # the decision that asked for more documents, for the next round's case
    while True:
        result = validate(customer_id)
        while not result.ok:
            if workflow.patched(BATCHES):
                result = take_late_documents(customer_id, result)
                if result.ok:
                    break
            round_ += 1
            workflow.step(
                steps.ask_for_documents,
                customer_id,
                result.missing,
                result.notes or result.problems,
                idempotency_key=f"{workflow.id}:ask:{round_}",
                limit=SEND,
                priority=progress.priority,
            )
            progress.missing = list(result.missing)
            publish_stage(
                progress,
                f"awaiting {result.missing[0]}"
                if len(result.missing) == 1
                else "awaiting documents",
            )
            if not receive_documents(customer_id, round_):
                return close(customer_id, "documents never completed", progress)
            result = validate(customer_id)
        progress.missing = []
        if workflow.patched(ASK_CNPJ) and not cnpj_asked:
            cnpj_asked = ask_for_cnpj_if_missing(customer_id, progress)
        workflow.step(steps.set_status, customer_id, CompanyStatus.IN_REVIEW, atomic=True)
        review += 1
        if workflow.patched(UNDER_REVIEW):
            workflow.step(
                steps.notify,
                customer_id,
                UNDER_REVIEW_TEXT,
                idempotency_key=f"{workflow.id}:under-review:{review}",
                limit=SEND,
                priority=progress.priority,
            )
        decision = wait_for_compliance_decision(customer_id, result, review, progress, sent_back)
        if decision.approved:
            break
        if not decision.wants_more_documents:
            workflow.step(
                steps.set_status, customer_id, CompanyStatus.REJECTED, decision.reason, atomic=True
            )
            workflow.step(
                steps.notify,
                customer_id,
                with_message(REJECTED_TEXT, decision),
                idempotency_key=f"{workflow.id}:{steps.REJECTED_NOTICE}",
                limit=SEND,
                priority=progress.priority,
            )
            publish_stage(progress, "rejected")
            return "rejected"
        # Compliance wants more: tell the customer what, then back to the documents loop.
        sent_back = decision
        round_ += 1
        workflow.step(
            steps.set_status, customer_id, CompanyStatus.COLLECTING, decision.reason, atomic=True
        )
        if workflow.patched(BATCHES):
            take_late_documents(
                customer_id, None
            )  # sent during the review: not an answer to this ask
        workflow.step(
            steps.request_more_documents,
            customer_id,
            decision.customer_message or decision.reason,
            idempotency_key=f"{workflow.id}:more:{review}",
            limit=SEND,
            priority=progress.priority,
        )
        publish_stage(progress, "awaiting more documents")
        if not receive_documents(customer_id, round_):
            return close(customer_id, "documents never completed", progress)
    number = workflow.step(
        steps.create_account,
        customer_id,
        ", ".join(decision.by),
        idempotency_key=workflow.id,
        atomic=True,
    )
    workflow.step(
        steps.notify,
        customer_id,
        with_message(f"Conta PJ aberta: {number}.", decision),
        idempotency_key=f"{workflow.id}:{steps.APPROVED_NOTICE}",
        limit=SEND,
        priority=progress.priority,
    )
    publish_stage(progress, "approved", account=number)
    return number


REJECTED_TEXT = "Não foi possível abrir a sua conta PJ agora."


def with_message(text: str, decision: Decision) -> str:
    """An outcome's notice and the reviewer's message to the customer, if any (never the
    reviewer's reason: that stays with compliance; decisions journaled before the message
    existed have none)."""
    return f"{text} {decision.customer_message}" if decision.customer_message else text


def receive_documents(customer_id: str, round_: int) -> bool:
    """One round: what the customer sends together; remind once at the deadline; False when
    the grace also passes."""
    if not workflow.patched(BATCHES):
        return receive_one_document(customer_id, round_)
    batch = collect_batch(DOCUMENTS_DEADLINE)
    if batch is None:
        workflow.step(
            steps.remind_documents,
            customer_id,
            idempotency_key=f"{workflow.id}:remind:{round_}",
            limit=SEND,
        )
        batch = collect_batch(DOCUMENTS_GRACE)
        if batch is None:
            return False
    fetch_documents(batch)
    return True


def ask_for_cnpj_if_missing(customer_id: str, progress: Progress) -> bool:
    """The documents are complete but no valid CNPJ was given: ask once, and wait for one
    (ONBOARDING_CNPJ_WAIT_SECONDS, a day) before the case opens. True when asked. A CNPJ
    written later still counts at the next review round; none at all keeps the case high risk."""
    if workflow.step(steps.has_valid_cnpj, customer_id):
        return False
    workflow.step(
        steps.ask_for_cnpj, customer_id, idempotency_key=f"{workflow.id}:ask-cnpj", limit=SEND
    )
    publish_stage(progress, "awaiting CNPJ")
    workflow.wait_for_signal(
        CNPJ_SIGNAL, timeout=seconds(conf.setting("ONBOARDING_CNPJ_WAIT_SECONDS", 86400))
    )
    return True


def collect_batch(timeout) -> list | None:
    """The documents sent together: closed once none has arrived for the quiet period
    (ONBOARDING_DOCUMENTS_QUIET_SECONDS, 30 s), so a batch is validated and answered once."""
    quiet = seconds(conf.setting("ONBOARDING_DOCUMENTS_QUIET_SECONDS", 30))
    return workflow.collect_signals(DOCUMENTS_SIGNAL, quiet=quiet, timeout=timeout)


def fetch_documents(batch: list) -> None:
    """Download every document of a batch, one step each, before anything validates it. A
    download that keeps failing is recorded as such: the checker never counts it."""
    for received in batch:
        try:
            workflow.step(steps.store_document_media, received["document_id"])
        except StepFailed as failed:
            workflow.step(
                steps.document_fetch_failed, received["document_id"], str(failed), atomic=True
            )


def take_late_documents(
    customer_id: str, result: ValidationResult | None
) -> ValidationResult | None:
    """Before an ask: take what arrived since the batch closed (fetched, and validated again
    when ``result`` is given), so nothing stale answers the next ask and the ask is current."""
    late = workflow.drain_signals(DOCUMENTS_SIGNAL)
    if not late:
        return result
    fetch_documents(late)
    return validate(customer_id) if result is not None else None


def receive_one_document(customer_id: str, round_: int) -> bool:
    """The path of runs recorded before BATCHES: one signal per round."""
    received = workflow.wait_for_signal(DOCUMENTS_SIGNAL, timeout=DOCUMENTS_DEADLINE)
    if received is None:
        workflow.step(
            steps.remind_documents,
            customer_id,
            idempotency_key=f"{workflow.id}:remind:{round_}",
            limit=SEND,
        )
        received = workflow.wait_for_signal(DOCUMENTS_SIGNAL, timeout=DOCUMENTS_GRACE)
        if received is None:
            return False
    workflow.step(steps.store_document_media, received["document_id"])
    return True


def validate(customer_id: str):
    try:
        return workflow.step(steps.validate_documents, customer_id, queue=LLM_QUEUE, limit=LLM)
    except StepFailed:  # the model never answered: the rules alone decide
        return workflow.step(steps.validate_documents_by_rules, customer_id)


def close(customer_id: str, reason: str, progress: Progress) -> str:
    workflow.step(steps.set_status, customer_id, CompanyStatus.CLOSED, reason, atomic=True)
    workflow.step(
        steps.notify,
        customer_id,
        "O seu pedido de conta PJ foi encerrado por falta de documentos.",
        idempotency_key=f"{workflow.id}:closed",
        limit=SEND,
    )
    publish_stage(progress, "expired")
    return "expired"


def review_risk(
    facts: steps.ReviewFacts, result: ValidationResult, record: dict | None = None
) -> tuple[str, list[dict]]:
    """High risk (two approvals by two different reviewers, senior review only) when the
    company gave no valid CNPJ, gave one another company already gave, or the validator
    found a problem on the way (a document it refused, or a model's finding). Reads only
    journaled step results, so every replay decides the same. The registry's ``record``
    (when the round asked it) adds its findings: not found, not active, not asked, and a
    legal name the customer gave that is not the registry's. The reasons are findings
    (processes/onboarding/findings.py)."""
    reasons = []
    if not facts.cnpj_valid:
        reasons.append(finding("risk", "no_cnpj"))
    if facts.same_cnpj:
        reasons.append(finding("risk", "same_cnpj", others="; ".join(facts.same_cnpj)))
    reasons += registry.risk_reasons(record) + registry.legal_name_risk(facts.legal_name, record)
    if result.problems:
        reasons.append(finding("risk", "validator_problems"))
    return ("high" if reasons else "low"), reasons


LOW_RISK_TEXT = "low: valid CNPJ, no validator problems"


def risk_text(reasons: list[dict]) -> str:
    """The case's ``risk`` line (English, as the API and older cases carry it)."""
    return "; ".join(reason["result"] for reason in reasons) or LOW_RISK_TEXT


def company_name(facts: steps.ReviewFacts, record: dict | None) -> str:
    """What the case calls the company: the registry's legal name, else the one the customer
    gave, else their WhatsApp profile name."""
    return (record or {}).get("legal_name") or facts.legal_name or facts.name


def case_title(
    facts: steps.ReviewFacts, customer_id: str, level: int, record: dict | None = None
) -> str:
    """The case's title: who, and their CNPJ (re-checks of an open case write it the same way)."""
    title = f"{company_name(facts, record) or customer_id} — CNPJ {facts.cnpj or 'not given'}"
    return title + (f" (escalated, level {level})" if level else "")


def validator_findings(result: ValidationResult) -> list[dict]:
    check = f"required documents ({result.checker})"
    findings = [
        finding(check, "documents_complete")
        if not result.missing
        else finding(check, "documents_missing", kinds=", ".join(result.missing))
    ]
    coded = [
        {key: value for key, value in note.items() if key not in ("kind", "solved")}
        for note in result.notes
    ]
    return findings + (
        coded or [{"check": "problem", "result": problem} for problem in result.problems]
    )


def case_findings(
    result: ValidationResult, record: dict | None, facts: steps.ReviewFacts, reasons: list[dict]
) -> list[dict]:
    """Everything the round's checks found, in the order a reviewer reads them: documents,
    registry, legal name, then each reason the case is high risk."""
    return (
        validator_findings(result)
        + registry.case_findings(record)
        + registry.legal_name_notes(facts.legal_name, record)
        + reasons
    )


def case_summary(
    facts: steps.ReviewFacts,
    customer_id: str,
    record: dict | None,
    findings: list[dict],
    reasons: list[dict],
) -> dict:
    return {
        "company": company_name(facts, record),
        "legal_name_given": facts.legal_name,
        "whatsapp_profile": facts.name,
        "cnpj": facts.cnpj or "not given",
        "whatsapp": facts.whatsapp,
        "customer_id": customer_id,
        "documents_received": "\n".join(facts.documents),
        "findings": findings,
        "risk": risk_text(reasons),
        # The registry's answer as the case was checked: a re-check for a new legal name
        # reads it here instead of asking the registry again.
        **({"registry": record} if record is not None else {}),
    }


def wait_for_compliance_decision(
    customer_id: str,
    result: ValidationResult,
    review: int,
    progress: Progress,
    sent_back: Decision | None = None,
) -> Decision:
    """Put the case before compliance (approvals app) and wait for a reviewer's decision.

    One case per review round and escalation level, keyed ``<run id>:review:<round>:<level>``.
    Nobody decides in DECISION_DEADLINE: the case expires, the review is escalated and a
    new case opens; the workflow never decides on the reviewer's behalf.
    """
    facts = workflow.step(steps.describe_for_review, customer_id)
    record = (
        workflow.step(steps.cnpj_registry_lookup, customer_id)
        if workflow.patched(CNPJ_REGISTRY)
        else None
    )
    if (
        record is not None
        and not facts.legal_name
        and not registry.registry_names(record)
        and workflow.patched(LEGAL_NAME)
    ):
        workflow.step(
            steps.ask_for_legal_name,
            customer_id,
            idempotency_key=f"{workflow.id}:ask-legal-name",
            limit=SEND,
        )
    publish_stage(
        progress, "in review", cnpj=facts.cnpj or None, company=company_name(facts, record) or None
    )
    risk, reasons = review_risk(facts, result, record)
    progress.priority = HIGH_RISK_PRIORITY if risk == "high" else None
    findings = case_findings(result, record, facts, reasons)
    level = 0
    while True:
        decision = request_approval(
            title=case_title(facts, customer_id, level, record),
            summary={
                **case_summary(facts, customer_id, record, findings, reasons),
                "review_round": review,
                "escalation_level": level,
                # A later round's case names the case that asked for more, and why.
                **(
                    {"follows_case": sent_back.request_id, "sent_back_because": sent_back.reason}
                    if sent_back is not None
                    else {}
                ),
            },
            subject=("company", customer_id),
            risk=risk,
            timeout=DECISION_DEADLINE,
            idempotency_key=f"{workflow.id}:review:{review}:{level}",
            candidate_groups=REVIEW_GROUPS[risk],
        )
        if decision is not None:
            return decision
        level += 1
        workflow.step(steps.escalate_review, customer_id, level, atomic=True)
