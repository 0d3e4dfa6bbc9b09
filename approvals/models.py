"""Approval requests, the decisions recorded on them, and their append-only audit trail.

Status changes go through django-fsm transitions (the field is protected); saves are
conditional on the status the row had when it was loaded (ConcurrentTransitionMixin), so
two reviewers racing on one case can never both move it.
"""

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy
from django_fsm import ConcurrentTransitionMixin, FSMField, transition

from durable.chain import AppendOnly, ChainedAudit  # noqa: F401  (AppendOnly: raised by audit rows)


class ApprovalStatus(models.TextChoices):
    PENDING = "pending", pgettext_lazy("case status", "Pending")
    CLAIMED = "claimed", pgettext_lazy("case status", "Claimed")
    APPROVED = "approved", pgettext_lazy("case status", "Approved")
    REJECTED = "rejected", pgettext_lazy("case status", "Rejected")
    # Sent back to the process for more documents: neither an approval nor a rejection.
    RETURNED = "returned", pgettext_lazy("case status", "Returned")
    EXPIRED = "expired", pgettext_lazy("case status", "Expired")
    CANCELLED = "cancelled", pgettext_lazy("case status", "Cancelled")
    # Approved or rejected, but the process ended (the customer withdrew, an operator
    # cancelled it) before it acted on the decision: nothing was done with it.
    SUPERSEDED = "superseded", pgettext_lazy("case status", "Superseded")


OPEN_STATUSES = (ApprovalStatus.PENDING, ApprovalStatus.CLAIMED)
DECIDED_STATUSES = (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED, ApprovalStatus.RETURNED)
CLOSED_STATUSES = (
    *DECIDED_STATUSES,
    ApprovalStatus.EXPIRED,
    ApprovalStatus.CANCELLED,
    ApprovalStatus.SUPERSEDED,
)
# Reviewers took a decision on it (the process may not have acted on it): what an evidence pack is
# about.
WITH_DECISION_STATUSES = (*DECIDED_STATUSES, ApprovalStatus.SUPERSEDED)


class Risk(models.TextChoices):
    LOW = "low", pgettext_lazy("risk", "Low")
    MEDIUM = "medium", pgettext_lazy("risk", "Medium")
    HIGH = "high", pgettext_lazy("risk", "High")


class Outcome(models.TextChoices):
    APPROVE = "approve", pgettext_lazy("outcome", "Approve")
    REJECT = "reject", pgettext_lazy("outcome", "Reject")
    MORE_DOCUMENTS = "more_documents", pgettext_lazy("outcome", "request more documents")


class ApprovalRequest(ConcurrentTransitionMixin, models.Model):
    """One case a workflow waits on: decided by reviewers, answered with one signal to its run."""

    # No database constraint: a case outlives its run's move to the archive (durable archive
    # keeps approval rows in place; the run is then read from durable's archive). The ORM
    # still refuses to delete a run with cases (PROTECT).
    run = models.ForeignKey(
        "durable.WorkflowRun",
        verbose_name=_("run"),
        on_delete=models.PROTECT,
        related_name="approval_requests",
        db_constraint=False,
    )
    # Copied from the run so case panels and filters need no join.
    workflow_name = models.CharField(_("workflow"), max_length=200, db_index=True)
    signal_name = models.CharField(_("signal"), max_length=255)
    # The step's idempotency key (<run id>:<position>:<step>): a step retried after a
    # crash finds the request it already created.
    idempotency_key = models.CharField(_("idempotency key"), max_length=255, unique=True)
    title = models.CharField(_("title"), max_length=300)
    summary = models.JSONField(_("summary"), default=dict, blank=True)
    subject_type = models.CharField(_("subject type"), max_length=100, blank=True, default="")
    subject_id = models.CharField(_("subject"), max_length=255, blank=True, default="")
    risk = models.CharField(_("risk"), max_length=8, choices=Risk.choices, default=Risk.LOW)
    required_approvals = models.PositiveSmallIntegerField(_("approvals required"), default=1)
    status = FSMField(
        _("status"),
        max_length=16,
        choices=ApprovalStatus.choices,
        default=ApprovalStatus.PENDING,
        protected=True,
        db_index=True,
    )
    due_at = models.DateTimeField(_("due at"), db_index=True)
    # Routing: only members of one of these groups may see, open and take the case. None
    # named means any compliance reviewer (cases opened before routing existed).
    candidate_groups = models.ManyToManyField(
        Group, blank=True, related_name="approval_requests", verbose_name=_("candidate groups")
    )
    # Hidden from the queue until then ("waiting for the customer's bank letter").
    follow_up_at = models.DateTimeField(_("follow-up date"), null=True, blank=True)
    assignee = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("assigned to"),
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="approval_requests_claimed",
    )
    claimed_at = models.DateTimeField(_("claimed at"), null=True, blank=True)
    outcome = models.CharField(
        _("outcome"), max_length=16, choices=Outcome.choices, blank=True, default=""
    )
    closed_at = models.DateTimeField(_("closed at"), null=True, blank=True)
    closed_by = models.CharField(_("closed by"), max_length=255, blank=True, default="")
    created_at = models.DateTimeField(
        _("created at"),
    )
    updated_at = models.DateTimeField(
        _("updated at"),
    )

    class Meta:
        ordering = ["due_at", "id"]
        verbose_name = _("approval request")
        verbose_name_plural = _("approval requests")
        indexes = [
            models.Index(fields=["status", "due_at"], name="approvals_open_due"),
            # The queue, soonest deadline first, read over the open cases only (with the
            # decided ones in approvals_open_due's order, a page read every closed case).
            models.Index(
                fields=["due_at", "id"],
                condition=models.Q(status__in=["pending", "claimed"]),
                name="approvals_open_queue",
            ),
            # The archive, latest decision first (a page without a sort of every closed case).
            models.Index(fields=["closed_at", "id"], name="approvals_closed"),
            # The dashboard's weekly time to decision reads this index alone (PostgreSQL: the
            # INCLUDE columns; other databases ignore them).
            models.Index(
                fields=["closed_at"],
                include=["created_at", "status"],
                name="approvals_closed_durations",
            ),
        ]
        permissions = [
            (
                "decide_approvalrequest",
                "Can claim and decide approval requests (compliance reviewer)",
            ),
        ]

    def __str__(self):
        return f"#{self.pk} {self.title} ({self.get_status_display()})"

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    @property
    def subject(self) -> str:
        return f"{self.subject_type}:{self.subject_id}" if self.subject_type else self.subject_id

    # --- Transitions. ---

    @transition(field=status, source=ApprovalStatus.PENDING, target=ApprovalStatus.CLAIMED)
    def claim(self):
        pass

    @transition(field=status, source=ApprovalStatus.CLAIMED, target=ApprovalStatus.PENDING)
    def release(self):
        """Also taken after the first of two approvals: the case waits for the second reviewer."""

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.CLAIMED)
    def reassign(self):
        """A supervisor hands the case (claimed or not) to another eligible reviewer."""

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.APPROVED)
    def approve(self):
        pass

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.REJECTED)
    def reject(self):
        pass

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.RETURNED)
    def send_back(self):
        pass

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.EXPIRED)
    def expire(self):
        pass

    @transition(field=status, source=OPEN_STATUSES, target=ApprovalStatus.CANCELLED)
    def cancel(self):
        pass

    @transition(
        field=status,
        source=[ApprovalStatus.APPROVED, ApprovalStatus.REJECTED],
        target=ApprovalStatus.SUPERSEDED,
    )
    def supersede(self):
        pass


class ApprovalDecision(models.Model):
    """One reviewer's vote. A high-risk case needs two approvals from two different people."""

    request = models.ForeignKey(
        ApprovalRequest, verbose_name=_("case"), on_delete=models.CASCADE, related_name="decisions"
    )
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        verbose_name=_("reviewer"),
        on_delete=models.PROTECT,
        related_name="approval_decisions",
    )
    outcome = models.CharField(_("outcome"), max_length=16, choices=Outcome.choices)
    # The compliance rationale: internal, audited, never sent to the customer.
    reason = models.TextField(_("rationale"), blank=True, default="")
    # What the process sent the customer with the outcome (approvals/customer_messages.py).
    customer_message = models.TextField(_("message to the customer"), blank=True, default="")
    created_at = models.DateTimeField(
        _("created at"),
    )

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("approval decision")
        verbose_name_plural = _("approval decisions")
        # The dashboard's tally of votes by reviewer and outcome reads this index alone.
        indexes = [models.Index(fields=["reviewer", "outcome"], name="approvals_votes_tally")]
        constraints = [
            # Four eyes in the schema too: one vote per reviewer per case.
            models.UniqueConstraint(
                fields=["request", "reviewer"], name="approvals_one_vote_per_reviewer"
            ),
        ]

    def __str__(self):
        return f"{self.reviewer} {self.outcome} #{self.request_id}"


class CaseAction(models.TextChoices):
    """What a case's audit row records (the row keeps the code), with what the trail shows.

    A decision's row is its outcome (``Outcome``'s values are three of these)."""

    CREATE = "create", pgettext_lazy("audit action", "opened")
    RECHECK = "recheck", pgettext_lazy("audit action", "re-checked")
    CLAIM = "claim", pgettext_lazy("audit action", "claimed")
    RELEASE = "release", pgettext_lazy("audit action", "released")
    APPROVE = "approve", pgettext_lazy("audit action", "approved")
    REJECT = "reject", pgettext_lazy("audit action", "rejected")
    MORE_DOCUMENTS = "more_documents", pgettext_lazy("audit action", "asked for more documents")
    EXPIRE = "expire", pgettext_lazy("audit action", "expired")
    CANCEL = "cancel", pgettext_lazy("audit action", "cancelled")
    REASSIGN = "reassign", pgettext_lazy("audit action", "reassigned")
    UNCLAIM = "unclaim", pgettext_lazy("audit action", "unclaimed by a supervisor")
    EXTEND_DEADLINE = "extend_deadline", pgettext_lazy("audit action", "deadline extended")
    FOLLOW_UP = "follow_up", pgettext_lazy("audit action", "follow-up date set")
    SUPERSEDE = (
        "supersede",
        pgettext_lazy("audit action", "superseded: the process ended before acting on it"),
    )
    OVERRIDE_HOLD = (
        "override_hold",
        pgettext_lazy("audit action", "hold overridden by a supervisor"),
    )
    EVIDENCE_DOWNLOADED = (
        "evidence_downloaded",
        pgettext_lazy("audit action", "evidence pack downloaded"),
    )
    NOTE = "note", pgettext_lazy("audit action", "internal note")
    FINDING = "finding", pgettext_lazy("audit action", "finding added")


# What the audit trail shows for each action it records.
AUDIT_ACTIONS = dict(CaseAction.choices)


class ApprovalAudit(ChainedAudit):
    """Who did what to which case, from which state to which, when, from which request.

    Append-only and hash-chained per case (durable/chain.py): saving an existing row or
    deleting one raises, and on PostgreSQL the database refuses it too.
    """

    chain_parent = "request"
    chained_fields = (
        "actor",
        "action",
        "from_status",
        "to_status",
        "reason",
        "ip",
        "user_agent",
        "path",
        "detail",
        "created_at",
    )

    request = models.ForeignKey(
        ApprovalRequest, verbose_name=_("case"), on_delete=models.PROTECT, related_name="audit"
    )
    actor = models.CharField(_("actor"), max_length=255)
    action = models.CharField(_("action"), max_length=32)
    from_status = models.CharField(_("from status"), max_length=16, blank=True, default="")
    to_status = models.CharField(_("to status"), max_length=16, blank=True, default="")
    reason = models.TextField(_("reason"), blank=True, default="")
    ip = models.GenericIPAddressField(_("IP"), null=True, blank=True)
    user_agent = models.CharField(_("browser"), max_length=500, blank=True, default="")
    path = models.CharField(_("path"), max_length=500, blank=True, default="")
    detail = models.JSONField(_("detail"), default=dict, blank=True)
    created_at = models.DateTimeField(
        _("when"),
    )

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("approval audit row")
        verbose_name_plural = _("approval audit trail")
        indexes = [models.Index(fields=["request", "created_at"], name="approvals_audit_request")]
        constraints = [
            models.UniqueConstraint(
                fields=["request", "chain_seq"], name="approvals_audit_chain_seq"
            )
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} #{self.request_id}"


class ReviewerPreference(models.Model):
    """A person's language for the reviewer UI and the admin, kept with the user rather than in
    one browser's cookie: the choice follows them from the laptop to the phone."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        verbose_name=_("user"),
        on_delete=models.CASCADE,
        related_name="reviewer_preference",
    )
    language = models.CharField(_("language"), max_length=10)
    updated_at = models.DateTimeField(
        _("updated at"),
    )

    class Meta:
        verbose_name = _("reviewer preference")
        verbose_name_plural = _("reviewer preferences")

    def __str__(self):
        return f"{self.user} {self.language}"
