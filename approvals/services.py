"""Writes on approval requests: create, claim, release, decide, expire, cancel, and the
supervisor's reassign, unclaim, deadline extension and follow-up date.

Every write locks the case row, checks its state, applies an FSM transition and appends
its audit row in one transaction. A final decision also sends the run's signal in that
transaction, under a dedupe key per case: a decision and the signal that resumes the
run commit together or not at all, and a case can never produce two signals.
"""

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _
from django_fsm import ConcurrentTransition

from approvals.customer_messages import MESSAGE_MAX
from approvals.duties import approval_conflict
from approvals.errors import (
    AlreadyClosed,
    ApprovalHeld,
    ApprovalNotFound,
    ClaimedByOther,
    ClaimRevoked,
    FourEyes,
    InvalidDate,
    InvalidOutcome,
    NotAllowed,
    NotEligible,
    ReasonRequired,
    RunEnded,
    SegregationOfDuties,
)
from approvals.evidence.pack import EvidencePack, evidence_pack
from approvals.holds import holds_for, holds_on
from approvals.hooks import case_opened
from approvals.models import (
    CLOSED_STATUSES,
    ApprovalAudit,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalStatus,
    CaseAction,
    Outcome,
    ReviewerPreference,
    Risk,
)
from durable import clock
from durable import services as durable_services
from durable.errors import RunFinished
from durable.selectors import run_get

DECIDE_PERMISSION = "approvals.decide_approvalrequest"
COMPLIANCE_GROUP = "compliance"
# Balances the queue: reassigns and unclaims cases, moves deadlines, sees the dashboard.
SUPERVISOR_GROUP = "compliance-supervisor"
# Download the evidence pack of any decided case; see no queue and decide nothing.
AUDITOR_GROUP = "auditors"
SYSTEM = "system"
# How far ahead a follow-up date or a moved deadline may be: a date years out is a typo, and
# one past year 9999 in UTC cannot be read back at all (it broke the case for everyone).
DATE_WINDOW = timedelta(days=366)
# Sent (under the case's own signal name) when a supervisor moves a deadline: the payload
# says so, and request_approval's wait re-reads the due date and waits until then.
DEADLINE_EXTENDED = "deadline_extended"
# A decision's signal goes out under "approval:<case id>", a prefix reserved for this app
# (see ApprovalsConfig.ready): nobody else can send a signal that pre-empts a decision.
SIGNAL_KEY_PREFIX = "approval:"
SIGNAL_KEY_OWNER = "approvals"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RequestMeta:
    """Where an action came from, for the audit trail."""

    ip: str | None = None
    user_agent: str = ""
    path: str = ""

    @classmethod
    def from_http(cls, request) -> "RequestMeta":
        return cls(
            ip=request.META.get("REMOTE_ADDR") or None,
            user_agent=request.META.get("HTTP_USER_AGENT", "")[:500],
            path=request.get_full_path()[:500],
        )


def compliance_group_ensure() -> Group:
    """The reviewers' group with the decide permission (also created by a data migration)."""
    content_type = ContentType.objects.get_for_model(ApprovalRequest)
    permission, _ = Permission.objects.get_or_create(
        content_type=content_type,
        codename="decide_approvalrequest",
        defaults={"name": "Can claim and decide approval requests (compliance reviewer)"},
    )
    group, _ = Group.objects.get_or_create(name=COMPLIANCE_GROUP)
    group.permissions.add(permission)
    return group


def is_reviewer(user) -> bool:
    """An active member of the compliance group (whose group grants the decide permission).

    Membership decides, not ``has_perm`` alone: a superuser passes every permission check,
    and an operator must never be one of a case's four eyes by being an operator.
    """
    return bool(
        user
        and user.is_authenticated
        and user.is_active
        and user.groups.filter(name=COMPLIANCE_GROUP).exists()
        and user.has_perm(DECIDE_PERMISSION)
    )


def _require_reviewer(user) -> None:
    if not is_reviewer(user):
        raise NotAllowed(
            _(
                "Only members of the compliance group may act on approval requests "
                "(being a superuser or an operator is not enough)."
            )
        )


def is_supervisor(user) -> bool:
    """An active member of the supervisors' group (membership, never superuser status)."""
    return bool(
        user
        and user.is_authenticated
        and user.is_active
        and user.groups.filter(name=SUPERVISOR_GROUP).exists()
    )


def _require_supervisor(user) -> None:
    if not is_supervisor(user):
        raise NotAllowed(
            _("Only members of the %(group)s group may reassign, unclaim or extend cases.")
            % {"group": SUPERVISOR_GROUP}
        )


def case_group_names(case: ApprovalRequest) -> list[str]:
    return sorted(case.candidate_groups.values_list("name", flat=True))


def may_take(case: ApprovalRequest, user) -> bool:
    """A reviewer in one of the case's candidate groups (any reviewer when none is named)."""
    if not is_reviewer(user):
        return False
    groups = case_group_names(case)
    return not groups or user.groups.filter(name__in=groups).exists()


def may_open(case: ApprovalRequest, user) -> bool:
    """Who may see the case page: whoever may take it, and the supervisors."""
    return may_take(case, user) or is_supervisor(user)


def is_auditor(user) -> bool:
    """An active member of the auditors' group (membership, never superuser status)."""
    return bool(
        user
        and user.is_authenticated
        and user.is_active
        and user.groups.filter(name=AUDITOR_GROUP).exists()
    )


def may_take_evidence(case: ApprovalRequest, user) -> bool:
    """Who may download a case's evidence pack: whoever may open the case, and the auditors."""
    return may_open(case, user) or is_auditor(user)


def _require_eligible(case: ApprovalRequest, user) -> None:
    _require_reviewer(user)
    if not may_take(case, user):
        raise NotEligible(
            _("Case #%(case)s is routed to %(groups)s; you are in none of them.")
            % {"case": case.pk, "groups": ", ".join(case_group_names(case))}
        )


def _revocation(case: ApprovalRequest, username: str) -> ApprovalAudit | None:
    """The supervisor's unclaim or reassignment that took ``username``'s claim, unless they
    claimed the case again since."""
    taken = (
        case.audit.filter(action__in=("unclaim", "reassign"), detail__from=username)
        .order_by("-chain_seq")
        .first()
    )
    if (
        taken is None
        or case.audit.filter(
            action=CaseAction.CLAIM, actor=username, chain_seq__gt=taken.chain_seq
        ).exists()
    ):
        return None
    return taken


def _refuse_if_revoked(case: ApprovalRequest, username: str) -> None:
    taken = _revocation(case, username)
    if taken is None:
        return
    values = {
        "case": case.pk,
        "who": taken.actor,
        "when": f"{taken.created_at:%Y-%m-%d %H:%M} UTC",
        "reason": taken.reason,
        "to": taken.detail.get("to") or "",
    }
    if taken.action == "reassign":
        message = (
            _(
                "Your claim on case #%(case)s was reassigned to %(to)s by %(who)s at %(when)s "
                "(%(reason)s); your decision was not recorded."
            )
            % values
        )
    else:
        message = (
            _(
                "Your claim on case #%(case)s was released by %(who)s at %(when)s (%(reason)s); "
                "your decision was not recorded. Claim the case again to decide it."
            )
            % values
        )
    raise ClaimRevoked(message)


def _audit(
    case: ApprovalRequest,
    action: str,
    actor: str,
    from_status: str,
    *,
    reason: str = "",
    meta: RequestMeta | None = None,
    detail: dict | None = None,
) -> ApprovalAudit:
    meta = meta or RequestMeta()
    return ApprovalAudit.objects.create(
        request=case,
        actor=actor,
        action=str(action),
        from_status=from_status,
        to_status=case.status,
        reason=reason,
        ip=meta.ip,
        user_agent=meta.user_agent,
        path=meta.path,
        detail=detail or {},
        created_at=clock.now(),
    )


def approval_lock(request_id: int) -> ApprovalRequest:
    """Inside a transaction: lock the case's run, then the case, and return the case. The
    order run_cancel and the workflow's own steps take them in too, so a reviewer deciding
    while the run is cancelled or expires waits instead of deadlocking."""
    run_id = ApprovalRequest.objects.filter(pk=request_id).values_list("run_id", flat=True).first()
    if run_id is None:
        raise ApprovalNotFound(f"no approval request #{request_id}")
    durable_services.run_lock(run_id)
    return ApprovalRequest.objects.select_for_update().get(pk=request_id)


def closed_message(case: ApprovalRequest) -> str:
    """Why a closed case is read-only, in the active language: who closed it, how and when (UTC)."""
    when = f"{case.closed_at:%Y-%m-%d %H:%M} UTC" if case.closed_at else _("an unknown time")
    values = {"id": case.pk, "when": when, "by": case.closed_by or SYSTEM}
    if case.status == ApprovalStatus.EXPIRED:
        return _("Case #%(id)s expired at %(when)s: nobody decided before its deadline.") % values
    messages = {
        ApprovalStatus.APPROVED: _("Case #%(id)s was already approved by %(by)s at %(when)s."),
        ApprovalStatus.REJECTED: _("Case #%(id)s was already rejected by %(by)s at %(when)s."),
        ApprovalStatus.RETURNED: _(
            "Case #%(id)s was already sent back for more documents by %(by)s at %(when)s."
        ),
        ApprovalStatus.CANCELLED: _("Case #%(id)s was already cancelled by %(by)s at %(when)s."),
        ApprovalStatus.SUPERSEDED: _(
            "Case #%(id)s's process was cancelled by %(by)s at %(when)s, before it "
            "acted on the decision."
        ),
    }
    return (
        messages.get(case.status, _("Case #%(id)s was already closed by %(by)s at %(when)s."))
        % values
    )


def _refuse_if_closed(case: ApprovalRequest) -> None:
    if case.status in CLOSED_STATUSES:
        raise AlreadyClosed(closed_message(case))


def _save(case: ApprovalRequest, fields: list[str]) -> None:
    """Save conditionally on the loaded status; a lost race names who won."""
    case.updated_at = clock.now()
    try:
        case.save(update_fields=[*fields, "status", "updated_at"])
    except ConcurrentTransition:
        fresh = ApprovalRequest.objects.get(pk=case.pk)
        if fresh.status in CLOSED_STATUSES:
            raise AlreadyClosed(closed_message(fresh)) from None
        raise ClaimedByOther(
            _("Case #%(id)s changed while you were acting on it; reload it.") % {"id": case.pk}
        ) from None


def _claimed_by(case: ApprovalRequest) -> str:
    return _("Case #%(id)s is claimed by %(user)s.") % {
        "id": case.pk,
        "user": case.assignee.get_username(),
    }


def _four_eyes(case: ApprovalRequest) -> str:
    return _("You already approved case #%(id)s; a second reviewer must decide it.") % {
        "id": case.pk
    }


def reviewer_language_set(user, language: str) -> ReviewerPreference:
    """Store the language ``user`` reads the UI in (one of settings.LANGUAGES).

    Not audited: a display preference, not an action on a case.
    """
    if language not in dict(settings.LANGUAGES):
        raise ValueError(
            "language must be one of "
            f"{[code for code, _name in settings.LANGUAGES]}, got {language!r}"
        )
    preference, _created = ReviewerPreference.objects.update_or_create(
        user=user, defaults={"language": language, "updated_at": clock.now()}
    )
    return preference


def approval_request_create(
    *,
    run_id: str,
    signal_name: str,
    idempotency_key: str,
    title: str,
    due_at: datetime,
    summary: dict | None = None,
    subject_type: str = "",
    subject_id: str = "",
    risk: str = Risk.LOW,
    required_approvals: int | None = None,
    candidate_groups: list[str] | None = None,
    actor: str,
) -> ApprovalRequest:
    """Open a case for a waiting run, routed to ``candidate_groups`` (names; any reviewer if none).

    Idempotent on ``idempotency_key``: the workflow step that calls this may run twice
    after a crash, and must find the case it already opened. A group named before anyone
    created it is created empty: the case waits for a supervisor rather than going to all.
    """
    existing = ApprovalRequest.objects.filter(idempotency_key=idempotency_key).first()
    if existing is not None:
        return existing
    if risk not in Risk.values:
        raise ValueError(f"risk must be one of {Risk.values}, got {risk!r}")
    if required_approvals is None:
        required_approvals = _default_approvals(risk)
    if required_approvals < 1:
        raise ValueError("a case needs at least one approval")
    run = run_get(run_id)
    now = clock.now()
    try:
        with transaction.atomic():
            case = ApprovalRequest.objects.create(
                run=run,
                workflow_name=run.workflow_name,
                signal_name=signal_name,
                idempotency_key=idempotency_key,
                title=title[:300],
                summary=summary or {},
                subject_type=subject_type,
                subject_id=subject_id,
                risk=risk,
                required_approvals=required_approvals,
                due_at=due_at,
                created_at=now,
                updated_at=now,
            )
            groups = sorted(set(candidate_groups or []))
            if groups:
                case.candidate_groups.set(
                    [Group.objects.get_or_create(name=name)[0] for name in groups]
                )
            _audit(
                case,
                CaseAction.CREATE,
                actor,
                "",
                detail={
                    "risk": risk,
                    "required_approvals": required_approvals,
                    "due_at": due_at.isoformat(),
                    "candidate_groups": groups,
                },
            )
            for receiver, error in case_opened.send_robust(sender=ApprovalRequest, case=case):
                if error is not None:  # the case still opens; a hold keeps stale data from approval
                    log.error(
                        "case_opened receiver %r failed for case %s",
                        receiver,
                        case.pk,
                        exc_info=error,
                    )
    except IntegrityError:
        existing = ApprovalRequest.objects.filter(idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return existing
    return case


def _default_approvals(risk: str) -> int:
    return 2 if risk == Risk.HIGH else 1


def approval_recheck(
    request_id: int,
    *,
    actor: str,
    title: str,
    summary: dict,
    risk: str,
    reason: str,
    candidate_groups: list[str] | None = None,
    meta: RequestMeta | None = None,
) -> ApprovalRequest:
    """Bring an open case up to date after its process re-ran its check on changed data
    (a CNPJ written during the review): new title, summary, risk and, when given, routing.

    Approvals given on what the case said before no longer count: they are voided (named
    in the audit row), so nobody's vote on stale data approves what the case says now.
    A claim stays with its reviewer; the required approvals follow the new risk, and the
    routing the process gives for it (``candidate_groups``) replaces the old one.
    """
    if risk not in Risk.values:
        raise ValueError(f"risk must be one of {Risk.values}, got {risk!r}")
    with transaction.atomic():
        case = approval_lock(request_id)
        _refuse_if_closed(case)
        before = {
            "title": case.title,
            "risk": case.risk,
            "required_approvals": case.required_approvals,
            "cnpj": case.summary.get("cnpj"),
            "whatsapp": case.summary.get("whatsapp"),
            "candidate_groups": case_group_names(case),
        }
        votes = case.decisions.select_related("reviewer")  # an open case holds approvals only
        voided = [vote.reviewer.get_username() for vote in votes]
        votes.delete()
        if case.required_approvals == _default_approvals(case.risk):  # not set by hand at opening
            case.required_approvals = _default_approvals(risk)
        case.title, case.summary, case.risk = title[:300], summary, risk
        _save(case, ["title", "summary", "risk", "required_approvals"])
        if candidate_groups is not None:
            case.candidate_groups.set(
                [
                    Group.objects.get_or_create(name=name)[0]
                    for name in sorted(set(candidate_groups))
                ]
            )
        after = {
            "title": case.title,
            "risk": case.risk,
            "required_approvals": case.required_approvals,
            "cnpj": case.summary.get("cnpj"),
            "whatsapp": case.summary.get("whatsapp"),
            "candidate_groups": case_group_names(case),
        }
        _audit(
            case,
            CaseAction.RECHECK,
            actor,
            case.status,
            reason=reason,
            meta=meta,
            detail={
                "changed": {
                    name: [before[name], after[name]]
                    for name in before
                    if before[name] != after[name]
                },
                "voided_approvals": voided,
            },
        )
    return case


def approval_finding_add(
    request_id: int, *, actor: str, finding: dict, reason: str
) -> ApprovalRequest:
    """Add what the process learnt about an open case's subject to its findings (an identity
    WhatsApp reports changed): the reviewer reads it with the others, and the audit row says
    when it came. Nothing else changes: risk, routing and approvals already given stay."""
    with transaction.atomic():
        case = approval_lock(request_id)
        _refuse_if_closed(case)
        case.summary = {**case.summary, "findings": [*case.summary.get("findings", []), finding]}
        _save(case, ["summary"])
        _audit(
            case, CaseAction.FINDING, actor, case.status, reason=reason, detail={"finding": finding}
        )
    return case


def approval_claim(request_id: int, *, actor, meta: RequestMeta | None = None) -> ApprovalRequest:
    """Take a case so that colleagues see someone is on it. Claiming your own claim is a no-op."""
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_eligible(case, actor)
        _refuse_if_closed(case)
        if case.status == ApprovalStatus.CLAIMED:
            if case.assignee_id == actor.pk:
                return case
            raise ClaimedByOther(_claimed_by(case))
        if case.decisions.filter(reviewer=actor).exists():
            raise FourEyes(_four_eyes(case))
        from_status = case.status
        case.claim()
        case.assignee, case.claimed_at = actor, clock.now()
        _save(case, ["assignee", "claimed_at"])
        _audit(case, CaseAction.CLAIM, actor.get_username(), from_status, meta=meta)
    return case


def approval_release(request_id: int, *, actor, meta: RequestMeta | None = None) -> ApprovalRequest:
    """Give a claimed case back to the queue. Only its assignee may."""
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_reviewer(actor)
        _refuse_if_closed(case)
        if case.status == ApprovalStatus.PENDING:
            return case
        if case.assignee_id != actor.pk:
            raise ClaimedByOther(
                _("Case #%(id)s is claimed by %(user)s; only they can release it.")
                % {"id": case.pk, "user": case.assignee.get_username()}
            )
        from_status = case.status
        case.release()
        case.assignee, case.claimed_at = None, None
        _save(case, ["assignee", "claimed_at"])
        _audit(case, CaseAction.RELEASE, actor.get_username(), from_status, meta=meta)
    return case


def decision_payload(case: ApprovalRequest) -> dict:
    """The signal a closed case sends: what ``request_approval`` returns as a Decision."""
    agreeing = case.decisions.filter(outcome=case.outcome).select_related("reviewer")
    last = agreeing.last()
    return {
        "request_id": case.pk,
        "approved": case.status == ApprovalStatus.APPROVED,
        "outcome": case.outcome,
        "by": [decision.reviewer.get_username() for decision in agreeing],
        "reason": last.reason if last else "",
        "customer_message": last.customer_message if last else "",
        "decided_at": case.closed_at.isoformat() if case.closed_at else None,
    }


def approval_decide(
    request_id: int,
    *,
    actor,
    outcome: str,
    reason: str = "",
    customer_message: str | None = None,
    meta: RequestMeta | None = None,
) -> ApprovalRequest:
    """Record a reviewer's decision; the final one closes the case and signals its run.

    A high-risk case needs ``required_approvals`` approvals from different reviewers; one
    rejection or request for more documents closes it at once. A reviewer who lost a race
    gets AlreadyClosed naming who decided; one who acted on the case's run, subject or
    evidence may not decide it at all (SegregationOfDuties, naming that action).

    Two texts: ``reason``, the compliance rationale (required to reject or ask for more
    documents; internal and audited, never sent), and ``customer_message``, what the process
    tells the customer with the outcome (approvals/customer_messages.py composes it). A
    request for more documents must tell the customer what to send; a caller that passes no
    ``customer_message`` at all (None: callers older than the two texts) has its reason sent.
    """
    if outcome not in Outcome.values:
        raise InvalidOutcome(f"outcome must be one of {Outcome.values}, got {outcome!r}")
    reason = (reason or "").strip()
    if outcome != Outcome.APPROVE and not reason:
        raise ReasonRequired(
            _(
                "Give a reason to reject: compliance and the "
                "auditors read it; the customer does not."
            )
            if outcome == Outcome.REJECT
            else _(
                "Give a reason to ask for more documents: compliance "
                "and the auditors read it; the customer does not."
            )
        )
    if customer_message is None:
        customer_message = reason if outcome == Outcome.MORE_DOCUMENTS else ""
    customer_message = customer_message.strip()
    if outcome == Outcome.MORE_DOCUMENTS and not customer_message:
        raise ReasonRequired(_("Tell the customer what to send: choose a message or write one."))
    if len(customer_message) > MESSAGE_MAX:
        raise InvalidOutcome(
            _("The message to the customer is longer than %(max)s characters.")
            % {"max": MESSAGE_MAX}
        )
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_eligible(case, actor)
        _refuse_if_closed(case)
        if case.assignee_id != actor.pk:
            _refuse_if_revoked(case, actor.get_username())
        if case.status == ApprovalStatus.CLAIMED and case.assignee_id != actor.pk:
            raise ClaimedByOther(_claimed_by(case))
        if case.decisions.filter(reviewer=actor).exists():
            raise FourEyes(_four_eyes(case))
        conflict = approval_conflict(case, actor)  # whatever the outcome: a decision is a decision
        if conflict:
            raise SegregationOfDuties(conflict)
        held = holds_for(case) if outcome == Outcome.APPROVE else []
        if held:
            raise ApprovalHeld(
                _("Case #%(id)s cannot be approved yet: %(holds)s.")
                % {"id": case.pk, "holds": "; ".join(held)}
            )
        now = clock.now()
        ApprovalDecision.objects.create(
            request=case,
            reviewer=actor,
            outcome=outcome,
            reason=reason,
            customer_message=customer_message,
            created_at=now,
        )
        from_status = case.status
        username = actor.get_username()
        approvals = case.decisions.filter(outcome=Outcome.APPROVE).count()
        if outcome == Outcome.APPROVE and approvals < case.required_approvals:
            # Four eyes: back to the queue for a different reviewer.
            if case.status == ApprovalStatus.CLAIMED:
                case.release()
            case.assignee, case.claimed_at = None, None
            _save(case, ["assignee", "claimed_at"])
            _audit(
                case,
                CaseAction.APPROVE,
                username,
                from_status,
                reason=reason,
                meta=meta,
                detail={"approvals": approvals, "required": case.required_approvals},
            )
            return case
        {
            Outcome.APPROVE: case.approve,
            Outcome.REJECT: case.reject,
            Outcome.MORE_DOCUMENTS: case.send_back,
        }[outcome]()
        voters = case.decisions.filter(outcome=outcome).select_related("reviewer")
        case.outcome, case.closed_at = outcome, now
        case.closed_by = ", ".join(vote.reviewer.get_username() for vote in voters)[:255]
        _save(case, ["outcome", "closed_at", "closed_by"])
        _audit(
            case,
            outcome,
            username,
            from_status,
            reason=reason,
            meta=meta,
            detail={
                "approvals": approvals,
                "required": case.required_approvals,
                **({"customer_message": customer_message} if customer_message else {}),
            },
        )
        try:
            durable_services.signal_send(
                case.run_id,
                case.signal_name,
                decision_payload(case),
                dedupe_key=f"{SIGNAL_KEY_PREFIX}{case.pk}",
                reserved_by=SIGNAL_KEY_OWNER,
                actor=f"reviewer:{username}",
                audit={"approval_request": case.pk, "ip": (meta or RequestMeta()).ip},
            )
        except RunFinished as exc:
            raise RunEnded(
                _("Case #%(id)s cannot be decided: its process has ended (%(error)s).")
                % {"id": case.pk, "error": exc}
            ) from exc
    return case


def approval_expire(request_id: int, *, actor: str) -> ApprovalRequest:
    """Close an open case whose deadline passed. A case already closed is returned as it is:
    the workflow's timeout step may meet a decision that arrived just before it."""
    with transaction.atomic():
        case = approval_lock(request_id)
        if case.status in CLOSED_STATUSES:
            return case
        from_status = case.status
        case.expire()
        case.closed_at, case.closed_by = clock.now(), actor
        _save(case, ["closed_at", "closed_by"])
        _audit(case, CaseAction.EXPIRE, actor, from_status)
    return case


def approval_cancel(
    request_id: int, *, actor: str, reason: str = "", meta: RequestMeta | None = None
) -> ApprovalRequest:
    """Withdraw an open case (the process was cancelled, or an operator closes it). No signal."""
    with transaction.atomic():
        case = approval_lock(request_id)
        _refuse_if_closed(case)
        from_status = case.status
        case.cancel()
        case.closed_at, case.closed_by = clock.now(), actor
        _save(case, ["closed_at", "closed_by"])
        _audit(case, CaseAction.CANCEL, actor, from_status, reason=reason, meta=meta)
    return case


def approval_supersede(
    request_id: int, *, actor: str, reason: str = "", meta: RequestMeta | None = None
) -> ApprovalRequest:
    """An approved or rejected case whose process ended before it acted on the decision (the
    customer withdrew, an operator cancelled the run): it is marked superseded, so no record
    counts an approval that opened nothing. Its decisions stay, as they were given."""
    with transaction.atomic():
        case = approval_lock(request_id)
        from_status = case.status
        case.supersede()
        case.closed_at, case.closed_by = clock.now(), actor
        _save(case, ["closed_at", "closed_by"])
        _audit(case, CaseAction.SUPERSEDE, actor, from_status, reason=reason, meta=meta)
    return case


# --- The supervisor's actions: every one needs a reason and names from whom and to whom. ---


def _require_reason(reason: str, what: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ReasonRequired(
            _("Give a reason to %(what)s: it goes into the case's audit trail.") % {"what": what}
        )
    return reason


def approval_reassign(
    request_id: int, *, actor, to_user, reason: str, meta: RequestMeta | None = None
) -> ApprovalRequest:
    """Hand a case to another eligible reviewer (claimed by them from now on).

    The previous holder's decision, sent from a page opened before this, is refused with
    ClaimRevoked naming the supervisor: nobody decides a case they no longer hold.
    """
    reason = _require_reason(reason, _("reassign a case"))
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_supervisor(actor)
        _refuse_if_closed(case)
        _require_eligible(case, to_user)
        if case.decisions.filter(reviewer=to_user).exists():
            raise FourEyes(
                _("%(user)s already approved case #%(case)s; a different reviewer must decide it.")
                % {"user": to_user.get_username(), "case": case.pk}
            )
        if case.assignee_id == to_user.pk:
            raise ClaimedByOther(
                _("Case #%(case)s is already claimed by %(user)s.")
                % {"case": case.pk, "user": to_user.get_username()}
            )
        from_status, previous = case.status, case.assignee.get_username() if case.assignee else ""
        case.reassign()
        case.assignee, case.claimed_at = to_user, clock.now()
        _save(case, ["assignee", "claimed_at"])
        _audit(
            case,
            CaseAction.REASSIGN,
            actor.get_username(),
            from_status,
            reason=reason,
            meta=meta,
            detail={"from": previous, "to": to_user.get_username()},
        )
    return case


def approval_unclaim(
    request_id: int, *, actor, reason: str, meta: RequestMeta | None = None
) -> ApprovalRequest:
    """Put a claimed case (a stale claim, say) back in the queue, whoever holds it."""
    reason = _require_reason(reason, _("release someone's claim"))
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_supervisor(actor)
        _refuse_if_closed(case)
        if case.status != ApprovalStatus.CLAIMED:
            raise ClaimedByOther(_("Case #%(case)s is not claimed by anyone.") % {"case": case.pk})
        from_status, previous = case.status, case.assignee.get_username()
        case.release()
        case.assignee, case.claimed_at = None, None
        _save(case, ["assignee", "claimed_at"])
        _audit(
            case,
            CaseAction.UNCLAIM,
            actor.get_username(),
            from_status,
            reason=reason,
            meta=meta,
            detail={"from": previous, "to": ""},
        )
    return case


def _refuse_beyond_the_window(when: datetime, message: str) -> None:
    latest = clock.now() + DATE_WINDOW
    if when > latest:
        raise InvalidDate(message % {"latest": f"{latest:%Y-%m-%d %H:%M}"})


def approval_hold_override(
    request_id: int, *, actor, reason: str, meta: RequestMeta | None = None
) -> ApprovalRequest:
    """A supervisor lifts the overridable holds on one open case (the process says which may
    be: onboarding's "no valid CNPJ"), with a reason, audited with what they said. The
    other holds stay; reviewers still decide, and the four-eyes rules still apply."""
    reason = _require_reason(reason, _("override a hold"))
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_supervisor(actor)
        _refuse_if_closed(case)
        lifted = [hold for hold in holds_on(case) if hold.overridable]
        if not lifted:
            raise NotAllowed(
                _("Case #%(id)s has no hold a supervisor may override.") % {"id": case.pk}
            )
        _audit(
            case,
            CaseAction.OVERRIDE_HOLD,
            actor.get_username(),
            case.status,
            reason=reason,
            meta=meta,
            detail={
                "holds": [hold.name for hold in lifted],
                "said": [reason for hold in lifted for reason in hold.reasons],
            },
        )
    return case


def approval_extend_deadline(
    request_id: int, *, actor, due_at: datetime, reason: str, meta: RequestMeta | None = None
) -> ApprovalRequest:
    """Move a case's deadline later, and tell its run so that its wait honours the new one.

    The signal carries nothing the workflow trusts: request_approval re-reads the case's
    due date in a step (the row decides, as with decisions).
    """
    reason = _require_reason(reason, _("extend a deadline"))
    with transaction.atomic():
        case = approval_lock(request_id)
        _require_supervisor(actor)
        _refuse_if_closed(case)
        if due_at is None or due_at <= case.due_at:
            raise InvalidDate(
                _("The new deadline must be later than the current one (%(due)s UTC).")
                % {"due": f"{case.due_at:%Y-%m-%d %H:%M}"}
            )
        if (
            due_at <= clock.now()
        ):  # an overdue case's new deadline: later than the old one is not enough
            raise InvalidDate(_("The new deadline must be in the future."))
        _refuse_beyond_the_window(
            due_at, _("The new deadline must be within a year, by %(latest)s UTC.")
        )
        previous = case.due_at
        case.due_at = due_at
        _save(case, ["due_at"])
        username = actor.get_username()
        _audit(
            case,
            CaseAction.EXTEND_DEADLINE,
            username,
            case.status,
            reason=reason,
            meta=meta,
            detail={"from": previous.isoformat(), "to": due_at.isoformat()},
        )
        try:
            durable_services.signal_send(
                case.run_id,
                case.signal_name,
                {"request_id": case.pk, DEADLINE_EXTENDED: due_at.isoformat()},
                dedupe_key=f"{SIGNAL_KEY_PREFIX}{case.pk}:deadline:{due_at.isoformat()}",
                reserved_by=SIGNAL_KEY_OWNER,
                actor=f"supervisor:{username}",
                audit={"approval_request": case.pk, "ip": (meta or RequestMeta()).ip},
            )
        except RunFinished as exc:
            raise RunEnded(
                _("Case #%(case)s cannot be extended: its process has ended (%(error)s).")
                % {"case": case.pk, "error": exc}
            ) from exc
    return case


def approval_follow_up(
    request_id: int,
    *,
    actor,
    until: datetime | None,
    reason: str = "",
    meta: RequestMeta | None = None,
) -> ApprovalRequest:
    """Hide a case from the queue until ``until`` (None shows it again). The deadline stays.

    For a reviewer who may take the case, or a supervisor.
    """
    with transaction.atomic():
        case = approval_lock(request_id)
        if not is_supervisor(actor):
            _require_eligible(case, actor)
        _refuse_if_closed(case)
        if until is not None:
            reason = _require_reason(reason, _("set a follow-up date"))
            if until <= clock.now():
                raise InvalidDate(_("The follow-up date must be in the future."))
            _refuse_beyond_the_window(
                until, _("The follow-up date must be within a year, by %(latest)s UTC.")
            )
        previous = case.follow_up_at
        case.follow_up_at = until
        _save(case, ["follow_up_at"])
        _audit(
            case,
            CaseAction.FOLLOW_UP,
            actor.get_username(),
            case.status,
            reason=(reason or "").strip(),
            meta=meta,
            detail={
                "from": previous.isoformat() if previous else None,
                "until": until.isoformat() if until else None,
            },
        )
    return case


NOTE_MAX = 2000


def approval_note_add(
    request_id: int, *, actor, text: str, meta: RequestMeta | None = None
) -> ApprovalRequest:
    """An internal note between reviewers on a case, open or decided: an audit row of its
    own (who, when, the text), never sent to the customer. For whoever may open the case."""
    text = (text or "").strip()
    if not text:
        raise ReasonRequired(_("Write the note first."))
    if len(text) > NOTE_MAX:
        raise ReasonRequired(_("A note is at most %(max)s characters.") % {"max": NOTE_MAX})
    with transaction.atomic():
        case = approval_lock(request_id)
        if not may_open(case, actor):
            raise NotEligible(
                _("Only those who may open case #%(id)s may write on it.") % {"id": case.pk}
            )
        _audit(case, CaseAction.NOTE, actor.get_username(), case.status, reason=text, meta=meta)
    return case


def approval_evidence_take(
    request_id: int, *, actor: str, via: str, meta: RequestMeta | None = None
) -> EvidencePack:
    """Build the evidence pack of a decided case and record in its trail who took it.

    The row holds what the pack cannot hold about itself: its manifest's SHA-256, and the head
    it ends at (the case is locked meanwhile, so the row links to that head), which an online
    check compares a pack with. Who may take it is the caller's check (``may_take_evidence``).
    """
    with transaction.atomic():
        case = ApprovalRequest.objects.select_for_update().filter(pk=request_id).first()
        if case is None:
            raise ApprovalNotFound(f"no approval request #{request_id}")
        pack = evidence_pack(case, taken_by=actor, via=via)
        _audit(
            case,
            CaseAction.EVIDENCE_DOWNLOADED,
            actor,
            case.status,
            meta=meta,
            detail={
                "manifest_sha256": pack.manifest_sha256,
                "head": pack.head,
                "audit_rows": pack.audit_rows,
                "bytes": len(pack.content),
                "via": via,
            },
        )
    return pack
