"""Rows that make a run durable: the run, its journal, its signals, and the audit trail.

Status changes go through django-fsm transitions on ``WorkflowRun`` (the field is
protected); the executor persists them with fenced conditional updates (see
durable/runtime/store/live.py).
"""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy
from django_fsm import FSMField, FSMModelMixin, can_proceed, transition

from durable.chain import EVENT_FIELDS, ChainedAudit
from durable.errors import InvalidTransition


class RunStatus(models.TextChoices):
    PENDING = "pending", pgettext_lazy("run status", "pending")
    RUNNING = "running", pgettext_lazy("run status", "running")
    WAITING = "waiting", pgettext_lazy("run status", "waiting")
    COMPLETED = "completed", pgettext_lazy("run status", "completed")
    FAILED = "failed", pgettext_lazy("run status", "failed")
    CANCELLED = "cancelled", pgettext_lazy("run status", "cancelled")
    BLOCKED = "blocked", pgettext_lazy("run status", "blocked")
    # ended with workflow.continue_as_new: its successor goes on
    CONTINUED = "continued", pgettext_lazy("run status", "continued")


ACTIVE_STATUSES = (RunStatus.PENDING, RunStatus.RUNNING, RunStatus.WAITING)
FINISHED_STATUSES = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.CANCELLED,
    RunStatus.CONTINUED,
)


class WorkflowRun(FSMModelMixin, models.Model):
    id = models.CharField(_("id"), primary_key=True, max_length=255)
    # Indexed by durable_run_wf_status, which leads with it (see Meta).
    workflow_name = models.CharField(_("workflow"), max_length=200)
    workflow_version = models.PositiveIntegerField(_("workflow version"), default=1)
    input = models.JSONField(_("input"), default=dict)
    status = FSMField(
        _("status"),
        max_length=16,
        choices=RunStatus.choices,
        default=RunStatus.PENDING,
        protected=True,
    )
    result = models.JSONField(_("result"), null=True, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    # When the sweep must dispatch this run: a deadline, a retry back-off, a lease expiry,
    # or the grace period of a dispatch that may have been lost. Null when nothing is due.
    wake_at = models.DateTimeField(_("wake at"), null=True, blank=True)
    waiting_for = models.CharField(_("waiting for"), max_length=255, blank=True, default="")
    lease_owner = models.CharField(_("lease held by"), max_length=255, blank=True, default="")
    lease_expires_at = models.DateTimeField(_("lease expires at"), null=True, blank=True)
    fencing_token = models.PositiveBigIntegerField(_("fencing token"), default=0)
    # Bumped by every signal, so a worker that is about to suspend notices a signal that
    # arrived after it looked (no lost wake-up).
    signal_seq = models.PositiveBigIntegerField(_("signals received"), default=0)
    advances = models.PositiveIntegerField(_("advances"), default=0)
    # Times the sweep sent the run since it was last claimed or woken: each resend waits
    # twice as long, so runs whose messages are only queued behind a backlog are not sent
    # again every grace period (durable.runtime.store.live.pick_due).
    resends = models.PositiveSmallIntegerField(default=0)
    # Takeovers of an expired lease since the run last parked, and the journal length at
    # which they happened: a step that kills its worker every time ends in a crash loop.
    recoveries = models.PositiveIntegerField(default=0)
    recovery_position = models.IntegerField(null=True, blank=True)
    # Every takeover of an expired lease in the run's life (never reset): /metrics sums it
    # into durable_lease_takeovers. Counted by the claim's own UPDATE, so it costs no statement.
    takeovers = models.PositiveIntegerField(default=0, db_default=0)
    # A graceful cancel asked for and not yet finished: {"reason", "actor", "deadline"}.
    cancel_request = models.JSONField(null=True, blank=True)
    # Search attributes the body set (workflow.set_attributes): JSON scalars by name, merged
    # key by key; "stage" is the human status operators see. GIN-indexed on PostgreSQL.
    attributes = models.JSONField(default=dict, blank=True)
    # The run that started this one with workflow.start_child: told when this one finishes,
    # and cancelling it cancels this one. No database constraint: either may be archived.
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="children",
    )
    # The run this one was forked from (services.run_fork), and the position it ran again
    # from: entries before it are the source's, copied. The source lists its forks.
    forked_from = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="forks",
    )
    fork_position = models.PositiveIntegerField(null=True, blank=True)
    # Continue-as-new: the run this one continued as, and the first run of the chain (null
    # on that first run). Signals, queries and cancels sent to any run of a chain reach
    # its newest (selectors.run_current).
    continued_as = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        related_name="+",
    )
    chain_root = models.CharField(max_length=255, null=True, blank=True)
    # 0..9, higher first: in the sweep's pick, in a limit's line, and in the broker.
    priority = models.PositiveSmallIntegerField(default=5)
    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(_("updated at"))
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)

    class Meta:
        verbose_name = _("workflow run")
        verbose_name_plural = _("workflow runs")
        ordering = ["-created_at"]
        indexes = [
            # The sweep reads "wake_at <= now" as a range scan over due runs only.
            models.Index(
                fields=["wake_at"], name="durable_run_due", condition=Q(wake_at__isnull=False)
            ),
            models.Index(fields=["workflow_name", "status"], name="durable_run_wf_status"),
            # Declared here, not with db_index: on PostgreSQL a db_index on a text column adds
            # a second, varchar_pattern_ops index for LIKE 'x%', which no query here makes and
            # which every claim, park, finish and signal (each a new row version, since they
            # change status or wake_at) paid for. Children are few: the rest skip that index.
            models.Index(fields=["status"], name="durable_run_status"),
            models.Index(
                fields=["parent"], name="durable_run_parent", condition=Q(parent__isnull=False)
            ),
            models.Index(
                fields=["forked_from"],
                name="durable_run_forked_from",
                condition=Q(forked_from__isnull=False),
            ),
            models.Index(
                fields=["chain_root"],
                name="durable_run_chain_root",
                condition=Q(chain_root__isnull=False),
            ),
            # The admin's run list, newest first: without it each page sorts the whole table
            # (1.8 s a page at a million runs, benchmarks/pages.py).
            models.Index(fields=["created_at"], name="durable_run_created"),
            # durable archive takes the oldest finished runs first (durable/features/archive.py).
            models.Index(
                fields=["finished_at"],
                name="durable_run_finished",
                condition=Q(finished_at__isnull=False),
            ),
            # /metrics sums takeovers over the runs that had one: a few rows, not the table.
            models.Index(
                fields=["workflow_name"],
                name="durable_run_taken_over",
                condition=Q(takeovers__gt=0),
            ),
        ]
        permissions = [
            ("operate_workflowrun", "Can cancel, retry, wake and signal workflow runs"),
        ]

    def __str__(self):
        return (
            f"{self.id} ({self.workflow_name} "
            f"v{self.workflow_version}, {self.get_status_display()})"
        )

    @property
    def is_finished(self) -> bool:
        return self.status in FINISHED_STATUSES

    def allows(self, transition_name: str) -> bool:
        """Whether the diagram has ``transition_name`` from the run's current status."""
        return can_proceed(getattr(self, transition_name))

    def status_after(self, transition_name: str) -> str:
        """The status ``transition_name`` leads to, without changing this object: callers
        write it first and apply the transition in memory only once the write succeeded."""
        for move in _status_field().get_all_transitions(WorkflowRun):
            if move.name == transition_name and move.source in (self.status, "*"):
                return move.target or self.status
        raise InvalidTransition(f"run {self.id!r} is {self.status}; it cannot {transition_name}")

    @classmethod
    def sources_of(cls, transition_name: str) -> list[str]:
        """The statuses ``transition_name`` may start from."""
        return [
            str(move.source)
            for move in _status_field().get_all_transitions(cls)
            if move.name == transition_name
        ]

    # --- Transitions: the lifecycle diagram of DESIGN.md, and nothing else. ---

    @transition(
        field=status,
        source=[RunStatus.PENDING, RunStatus.WAITING, RunStatus.RUNNING],
        target=RunStatus.RUNNING,
    )
    def claim(self):
        """RUNNING -> RUNNING is a takeover of an expired lease."""

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.WAITING)
    def suspend(self):
        pass

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.PENDING)
    def release(self):
        pass

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.COMPLETED)
    def complete(self):
        pass

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.FAILED)
    def fail(self):
        pass

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.CONTINUED)
    def continue_as_new(self):
        """The body called workflow.continue_as_new: its successor starts in the same write."""

    @transition(field=status, source=RunStatus.RUNNING, target=RunStatus.BLOCKED)
    def block(self):
        pass

    @transition(
        field=status,
        source=[
            RunStatus.PENDING,
            RunStatus.RUNNING,
            RunStatus.WAITING,
            RunStatus.BLOCKED,
            RunStatus.FAILED,
        ],
        target=RunStatus.CANCELLED,
    )
    def cancel(self):
        pass

    @transition(
        field=status, source=[RunStatus.FAILED, RunStatus.BLOCKED], target=RunStatus.PENDING
    )
    def retry(self):
        pass

    @transition(field=status, source=[RunStatus.PENDING, RunStatus.WAITING], target=None)
    def wake(self):
        """Its timer fires now; the status stays (the next advance decides what follows)."""


def _status_field():
    return WorkflowRun._meta.get_field("status")


class EntryKind(models.TextChoices):
    STEP = "step", pgettext_lazy("journal kind", "step")
    SIGNAL = "signal", pgettext_lazy("journal kind", "signal")
    SLEEP = "sleep", pgettext_lazy("journal kind", "sleep")
    NOW = "now", pgettext_lazy("journal kind", "clock")
    UUID = "uuid4", pgettext_lazy("journal kind", "identifier")
    RANDOM = "random", pgettext_lazy("journal kind", "random value")
    PATCH = "patch", pgettext_lazy("journal kind", "version marker")
    DRAIN = "drain", pgettext_lazy("journal kind", "buffered signals")
    ATTRIBUTES = "attributes", pgettext_lazy("journal kind", "search attributes")
    CHILD = "child", pgettext_lazy("journal kind", "child run")
    UPDATE = "update", pgettext_lazy("journal kind", "update")


class EntryStatus(models.TextChoices):
    COMPLETED = "completed", pgettext_lazy("journal status", "done")
    FAILED = "failed", pgettext_lazy("journal status", "failed")
    # a wait or sleep whose time has not come
    WAITING = "waiting", pgettext_lazy("journal status", "waiting")
    # a step that failed and will run again at wake_at
    RETRYING = "retrying", pgettext_lazy("journal status", "retrying")
    # a step attempt with a timeout, running until wake_at
    STARTED = "started", pgettext_lazy("journal status", "running")
    # a graceful cancel was delivered to the body here
    CANCELLED = "cancelled", pgettext_lazy("journal status", "cancelled")


class JournalEntry(models.Model):
    # db_index=False: the unique (run, position) index leads with run and serves every
    # lookup by run; a second index (two on PostgreSQL) was written at every step for nothing.
    run = models.ForeignKey(
        WorkflowRun, on_delete=models.CASCADE, related_name="journal", db_index=False
    )
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16, choices=EntryKind.choices)
    name = models.CharField(max_length=255)
    status = models.CharField(max_length=16, choices=EntryStatus.choices)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, blank=True, default="")
    attempt = models.PositiveIntegerField(default=0)
    wake_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "position"], name="durable_journal_run_position"
            ),
        ]
        verbose_name = _("journal entry")
        verbose_name_plural = _("journal entries")

    def __str__(self):
        return f"{self.run_id}#{self.position} {self.kind}:{self.name} {self.status}"

    @property
    def duration(self):
        if self.started_at and self.status in (EntryStatus.COMPLETED, EntryStatus.FAILED):
            return self.updated_at - self.started_at
        return None


class Signal(models.Model):
    # Looked up by run through durable_signal_pending, which leads with it.
    run = models.ForeignKey(
        WorkflowRun, on_delete=models.CASCADE, related_name="signals", db_index=False
    )
    name = models.CharField(max_length=255)
    payload = models.JSONField(null=True, blank=True)
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)
    consumed_position = models.PositiveIntegerField(null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "dedupe_key"],
                name="durable_signal_dedupe",
                condition=Q(dedupe_key__isnull=False),
            ),
        ]
        indexes = [models.Index(fields=["run", "consumed_position"], name="durable_signal_pending")]

    def __str__(self):
        return f"{self.name} -> {self.run_id}"


class AuditAction(models.TextChoices):
    """What a run's audit event records (as Zulip's AuditLogEventType names its events); the
    row keeps the string, so the trail written before these names reads the same."""

    START = "start", pgettext_lazy("run audit action", "started")
    SIGNAL = "signal", pgettext_lazy("run audit action", "signal sent")
    CANCEL = "cancel", pgettext_lazy("run audit action", "cancelled")
    RETRY = "retry", pgettext_lazy("run audit action", "retried")
    WAKE = "wake", pgettext_lazy("run audit action", "woken")
    ARCHIVE = "archive", pgettext_lazy("run audit action", "archived")
    FORK = "fork", pgettext_lazy("run audit action", "forked")
    CONTINUE_AS_NEW = "continue_as_new", pgettext_lazy("run audit action", "continued as new")


class AuditEvent(ChainedAudit):
    """Who did what to which run, when, from which request.

    Append-only and hash-chained per run (durable/chain.py); a run with audit events is
    never deleted, so its trail cannot go with it.
    """

    chain_parent = "run"
    chained_fields = EVENT_FIELDS
    archived_in = "durable.ArchivedAuditEvent"

    # Looked up by run through the unique (run, chain_seq) index, which leads with it.
    run = models.ForeignKey(
        WorkflowRun,
        on_delete=models.PROTECT,
        related_name="audit_events",
        db_index=False,
        verbose_name=_("run"),
    )
    action = models.CharField(_("action"), max_length=32)
    actor = models.CharField(_("actor"), max_length=255, default="system")
    detail = models.JSONField(_("detail"), default=dict, blank=True)
    created_at = models.DateTimeField(_("when"))

    class Meta:
        verbose_name = _("run audit event")
        verbose_name_plural = _("run audit trail")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "chain_seq"], name="durable_audit_chain_seq")
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.run_id}"


class TicketState(models.TextChoices):
    # in line: the run sleeps until its wake_at, or a holder wakes it
    WAITING = "waiting", pgettext_lazy("limit ticket state", "waiting")
    # the step runs under it (a slot, a token)
    HELD = "held", pgettext_lazy("limit ticket state", "held")
    # the step ended; kept while it still counts in a rate window
    RELEASED = "released", pgettext_lazy("limit ticket state", "released")


class LimitTicket(models.Model):
    """A run's place at a limit (``durable.limit``) for the step at ``position``.

    A held ticket is live only while its run is running under ``fencing_token`` with an
    unexpired lease: a killed worker's slot frees itself when its lease runs out.
    """

    limit_name = models.CharField(_("limit"), max_length=100)
    limit_key = models.CharField(_("key"), max_length=255, blank=True, default="")
    run = models.ForeignKey(WorkflowRun, on_delete=models.CASCADE, related_name="limit_tickets")
    position = models.PositiveIntegerField(_("position"))
    state = models.CharField(_("state"), max_length=16, choices=TicketState.choices)
    fencing_token = models.PositiveBigIntegerField(default=0)
    # The queue the step runs on: a holder that frees a slot sends the next waiter there.
    queue = models.CharField(_("queue"), max_length=200, blank=True, default="")
    # The step's priority (its run's, unless the step names one): the line is served
    # higher first, and first come first served within one priority.
    priority = models.PositiveSmallIntegerField(default=5)
    queued_at = models.DateTimeField(_("queued at"))
    wake_at = models.DateTimeField(_("wake at"), null=True, blank=True)
    granted_at = models.DateTimeField(_("granted at"), null=True, blank=True)
    released_at = models.DateTimeField(_("released at"), null=True, blank=True)

    class Meta:
        verbose_name = _("limit ticket")
        verbose_name_plural = _("limit tickets")
        ordering = ["queued_at", "id"]
        # The line of a limit, higher priority first, then oldest first: its head and its
        # tail are read without the rest.
        indexes = [
            models.Index(
                fields=["limit_name", "limit_key", "state", "-priority", "queued_at", "id"],
                name="durable_ticket_priority_line",
            )
        ]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "position"],
                name="durable_ticket_run_position",
                condition=Q(state__in=["waiting", "held"]),
            ),
        ]

    def __str__(self):
        key = f"[{self.limit_key}]" if self.limit_key else ""
        return f"{self.limit_name}{key} {self.run_id}#{self.position} {self.state}"
