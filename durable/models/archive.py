"""Archive tables: finished runs moved out of the hot tables by ``durable archive``, read-only.

Rows keep the ids they had in the hot tables, so a copy can be matched with its original
(the audit table's DELETE trigger allows a row to leave only once its copy is here) and a
repeated copy is a primary-key error, never a duplicate. With ``--export`` the journal and
signals leave the database for a gzip file; the run stays as a tombstone (no input, result
or error) and its audit chain stays here, where ``durable audit verify`` walks it.
"""

from django.db import models
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from durable.chain import EVENT_FIELDS, AppendOnly, ChainedAudit
from durable.models.runs import RunStatus


class ArchiveBatch(models.Model):
    """One committed batch of ``durable archive``: how many runs, by whom, to which file."""

    # Names the export file before the batch commits: a file whose token has no batch row
    # is what a killed pass left behind, and the next pass deletes it.
    token = models.CharField(_("token"), max_length=32, unique=True)
    actor = models.CharField(_("actor"), max_length=255)
    # Where the pass came from (via, user, host): here once, not in every run's archive event.
    detail = models.JSONField(default=dict, blank=True)
    finished_before = models.DateTimeField(_("finished before"))
    runs = models.PositiveIntegerField(_("runs"))
    export_file = models.CharField(_("export file"), max_length=1000, blank=True, default="")
    export_sha256 = models.CharField(_("export SHA-256"), max_length=64, blank=True, default="")
    export_bytes = models.PositiveBigIntegerField(_("export size (bytes)"), default=0)
    created_at = models.DateTimeField(_("created at"))

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("archive batch")
        verbose_name_plural = _("archive batches")

    def __str__(self):
        where = f" -> {self.export_file}" if self.export_file else ""
        return ngettext(
            "batch %(token)s: %(count)d run%(where)s",
            "batch %(token)s: %(count)d runs%(where)s",
            self.runs,
        ) % {"token": self.token, "count": self.runs, "where": where}


class ArchivedRun(models.Model):
    """A finished run as it was when archived (a tombstone when exported: no input/result/error)."""

    id = models.CharField(_("id"), primary_key=True, max_length=255)
    workflow_name = models.CharField(_("workflow"), max_length=200, db_index=True)
    workflow_version = models.PositiveIntegerField(_("workflow version"))
    status = models.CharField(_("status"), max_length=16, choices=RunStatus.choices)
    input = models.JSONField(_("input"), null=True, blank=True)
    result = models.JSONField(_("result"), null=True, blank=True)
    error = models.JSONField(_("error"), null=True, blank=True)
    attributes = models.JSONField(_("search attributes"), default=dict, blank=True)
    advances = models.PositiveIntegerField(_("advances"), default=0)
    # WorkflowRun.takeovers, kept so that durable_lease_takeovers never goes down when the
    # archive takes a run out of the hot table.
    takeovers = models.PositiveIntegerField(default=0, db_default=0)
    # The parent run's id for a child workflow (WorkflowRun.parent), kept as text: the
    # parent may be hot, archived, or gone. Null where the hot table has no such column.
    parent_id = models.CharField(max_length=255, null=True, blank=True)
    # The run it was forked from, and where (WorkflowRun.forked_from, fork_position), as text.
    forked_from_id = models.CharField(max_length=255, null=True, blank=True)
    fork_position = models.PositiveIntegerField(null=True, blank=True)
    # Continue-as-new (WorkflowRun.continued_as, chain_root), as text.
    continued_as_id = models.CharField(max_length=255, null=True, blank=True)
    chain_root = models.CharField(max_length=255, null=True, blank=True)
    priority = models.PositiveSmallIntegerField(default=5)
    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(_("updated at"))
    finished_at = models.DateTimeField(_("finished at"), db_index=True)
    archived_at = models.DateTimeField(_("archived at"))
    batch = models.ForeignKey(
        ArchiveBatch,
        on_delete=models.PROTECT,
        related_name="archived_runs",
        verbose_name=_("archive batch"),
    )

    # A finished run waits for nothing: the API's run shape still has these fields.
    waiting_for = ""
    wake_at = None

    class Meta:
        ordering = ["-finished_at", "id"]
        indexes = [
            models.Index(
                fields=["workflow_name"],
                name="durable_archived_taken_over",
                condition=models.Q(takeovers__gt=0),
            ),
        ]
        verbose_name = _("archived run")
        verbose_name_plural = _("archived runs")

    def __str__(self):
        return gettext("%(run)s (%(workflow)s v%(version)s, %(status)s, archived)") % {
            "run": self.id,
            "workflow": self.workflow_name,
            "version": self.workflow_version,
            "status": self.get_status_display(),
        }

    @property
    def exported(self) -> bool:
        return bool(self.batch.export_file)


class ArchivedJournalEntry(models.Model):
    id = models.BigIntegerField(primary_key=True)
    run = models.ForeignKey(ArchivedRun, on_delete=models.PROTECT, related_name="journal")
    position = models.PositiveIntegerField()
    kind = models.CharField(max_length=16)
    name = models.CharField(max_length=255)
    status = models.CharField(max_length=16)
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
            models.UniqueConstraint(fields=["run", "position"], name="durable_archived_journal_pos")
        ]
        verbose_name = _("archived journal entry")
        verbose_name_plural = _("archived journal entries")

    @property
    def duration(self):
        if self.started_at and self.status in ("completed", "failed"):
            return self.updated_at - self.started_at
        return None


class ArchivedSignal(models.Model):
    id = models.BigIntegerField(primary_key=True)
    run = models.ForeignKey(ArchivedRun, on_delete=models.PROTECT, related_name="signals")
    name = models.CharField(max_length=255)
    payload = models.JSONField(null=True, blank=True)
    dedupe_key = models.CharField(max_length=255, null=True, blank=True)
    consumed_position = models.PositiveIntegerField(null=True, blank=True)
    consumed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]


class ArchivedAuditEvent(ChainedAudit):
    """A run's audit chain, moved whole (same ids, same hashes): verified like the hot table."""

    chain_parent = "run"
    chained_fields = EVENT_FIELDS

    id = models.BigIntegerField(primary_key=True)
    run = models.ForeignKey(ArchivedRun, on_delete=models.PROTECT, related_name="audit_events")
    action = models.CharField(max_length=32)
    actor = models.CharField(max_length=255)
    detail = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "chain_seq"], name="durable_archived_audit_seq")
        ]

    def save(self, *args, **kwargs):
        raise AppendOnly("archived audit rows are copies made by durable archive, never written")
