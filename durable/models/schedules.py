"""Schedules as rows: a workflow started at each occurrence of a cron expression, and their audit
trail.

A schedule is data, not a beat entry, so operators pause it, and see when it fires next,
without a deploy; the sweep (durable/features/schedules.py) fires it. Imported by durable.models.
"""

from django.db import models
from django.db.models import Q
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from durable.chain import EVENT_FIELDS, ChainedAudit


class CatchUp(models.TextChoices):
    """What the sweep does with occurrences that passed while it was not running."""

    ALL = "all", _("all: each missed occurrence once")
    LATEST = "latest", _("latest: only the most recent missed occurrence")
    SKIP = "skip", _("skip: none missed, only from now on")


class Schedule(models.Model):
    name = models.SlugField(_("name"), max_length=100, unique=True)
    workflow_name = models.CharField(_("workflow"), max_length=200)
    cron = models.CharField(
        _("cron"),
        max_length=100,
        help_text=_("Five fields: minute hour day-of-month month day-of-week, e.g. '30 0 * * *'."),
    )
    timezone = models.CharField(
        _("time zone"),
        max_length=64,
        default="UTC",
        help_text=_("IANA name; the cron and the id's {date} are read in it."),
    )
    id_template = models.CharField(
        _("run id template"),
        max_length=255,
        help_text=_(
            "The run id of an occurrence, e.g. 'reconcile:{date}'. "
            "The run id is the occurrence: it never runs twice."
        ),
    )
    args = models.JSONField(_("positional arguments"), default=list, blank=True)
    kwargs = models.JSONField(_("keyword arguments"), default=dict, blank=True)
    catch_up = models.CharField(
        _("missed occurrences"), max_length=8, choices=CatchUp.choices, default=CatchUp.ALL
    )
    paused = models.BooleanField(_("paused"), default=False)
    # The first occurrence not yet fired (or skipped); null while paused. The sweep reads
    # "next_fire_at <= now" on a partial index, so a paused schedule costs nothing.
    next_fire_at = models.DateTimeField(null=True, blank=True)
    last_fired_at = models.DateTimeField(
        _("last fired"),
        null=True,
        blank=True,
        help_text=_("The occurrence (scheduled time) fired last."),
    )
    last_run_id = models.CharField(_("last run"), max_length=255, blank=True, default="")
    # Why the last sweep could not fire it (its workflow is gone, its input no longer fits);
    # cleared by the next firing.
    last_error = models.TextField(_("last error"), blank=True, default="")
    created_at = models.DateTimeField(_("created at"))
    updated_at = models.DateTimeField(_("updated at"))

    class Meta:
        verbose_name = _("schedule")
        verbose_name_plural = _("schedules")
        ordering = ["name"]
        indexes = [
            models.Index(
                fields=["next_fire_at"],
                name="durable_schedule_due",
                condition=Q(next_fire_at__isnull=False),
            )
        ]
        permissions = [("operate_schedule", "Can pause and resume schedules")]

    def __str__(self):
        return self.name


class ScheduleAction(models.TextChoices):
    """What a schedule's audit event records: an operator's change, or what a sweep did."""

    CREATE = "create", pgettext_lazy("schedule audit action", "created")
    UPDATE = "update", pgettext_lazy("schedule audit action", "changed")
    PAUSE = "pause", pgettext_lazy("schedule audit action", "paused")
    RESUME = "resume", pgettext_lazy("schedule audit action", "resumed")
    FIRE = "fire", pgettext_lazy("schedule audit action", "fired")
    SKIP = "skip", pgettext_lazy("schedule audit action", "skipped")
    # an operator started the occurrence of now by hand
    TRIGGER = "trigger", pgettext_lazy("schedule audit action", "started by hand")


class ScheduleEvent(ChainedAudit):
    """Who created, paused or resumed a schedule, and what each sweep fired or skipped.

    Append-only and hash-chained per schedule (durable/chain.py), like the runs' audit trail.
    """

    chain_parent = "schedule"
    chained_fields = EVENT_FIELDS

    schedule = models.ForeignKey(Schedule, on_delete=models.PROTECT, related_name="events")
    action = models.CharField(_("action"), max_length=32)
    actor = models.CharField(_("actor"), max_length=255, default="system")
    detail = models.JSONField(_("detail"), default=dict, blank=True)
    created_at = models.DateTimeField(_("when"))

    class Meta:
        verbose_name = _("schedule audit event")
        verbose_name_plural = _("schedule audit trail")
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["schedule", "chain_seq"], name="durable_schedule_event_chain_seq"
            )
        ]

    def __str__(self):
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.actor} {self.action} {self.schedule_id}"
