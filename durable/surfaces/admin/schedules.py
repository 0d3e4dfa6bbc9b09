"""The schedules' admin: when each fires next and what it fired; create, change, pause, resume,
audited.

Nothing here writes a row directly: every write goes through ``durable.features.schedules`` (which
checks the cron, the zone, the templates and the input, locks the row and writes the
audit trail). Pausing and resuming need ``durable.operate_schedule``; adding and changing
need Django's add/change permissions on schedules. Nothing is deleted: the trail stays.
"""

from django import forms
from django.contrib import admin, messages
from django.utils.html import format_html
from django.utils.text import format_lazy
from django.utils.translation import get_language, gettext_lazy, ngettext, pgettext

from durable.errors import DurableError
from durable.features import cron, schedules
from durable.models.schedules import Schedule, ScheduleAction, ScheduleEvent
from durable.surfaces.admin.display import (
    EngineAssets,
    badge,
    data,
    json_block,
    label,
    run_link,
    stamp_column,
)
from durable.surfaces.audit import request_audit

OPERATE_SCHEDULE_PERMISSION = "durable.operate_schedule"
EDITABLE = [
    "name",
    "workflow_name",
    "cron",
    "timezone",
    "id_template",
    "args",
    "kwargs",
    "catch_up",
]
PLACEHOLDERS = ", ".join(f'<code translate="no">{{{name}}}</code>' for name in cron.PLACEHOLDERS)
BOOKKEEPING = [
    "when",
    "state",
    "next_fire_at_stamp",
    "last_fired_at_stamp",
    "last_run",
    "last_error",
    "created_at_stamp",
    "updated_at_stamp",
]


class ScheduleForm(forms.ModelForm):
    """The fields an operator writes, checked by the service before anything is saved."""

    class Meta:
        model = Schedule
        fields = EDITABLE
        # Placeholders and examples are code: marked so, they are never translated.
        help_texts = {
            "timezone": gettext_lazy(
                'IANA name; the cron and the id\'s <code translate="no">{date}</code> are '
                "read in it."
            ),
            "id_template": format_lazy(
                gettext_lazy(
                    "The run id of an occurrence, e.g. <code "
                    'translate="no">reconcile:{{date}}</code>. Placeholders: '
                    "{placeholders}. The run id is the occurrence: it never runs twice."
                ),
                placeholders=PLACEHOLDERS,
            ),
            "args": gettext_lazy(
                "JSON list; its strings take the same placeholders, e.g. "
                '<code translate="no">["{date}"]</code>.'
            ),
        }

    def clean(self):
        cleaned = super().clean()
        if self.errors:
            return cleaned
        values = {**{field: getattr(self.instance, field) for field in EDITABLE}, **cleaned}
        try:
            self.checked = schedules.schedule_check(
                name=values["name"],
                workflow=values["workflow_name"],
                cron_expression=values["cron"],
                timezone=values["timezone"],
                id_template=values["id_template"],
                args=values["args"],
                kwargs=values["kwargs"],
                catch_up=values["catch_up"],
            )
        except DurableError as error:
            raise forms.ValidationError(str(error)) from None
        return cleaned


class ScheduleEventInline(admin.TabularInline):
    model = ScheduleEvent
    fields = readonly_fields = ["created_at", "action_label", "actor_cell", "detail_json"]
    extra = 0
    can_delete = False
    ordering = ["-created_at", "-id"]
    verbose_name_plural = gettext_lazy("audit trail (newest first)")

    def has_view_permission(self, request, obj=None):
        """Whoever sees the schedule sees its trail, as a run's page shows its audit events."""
        return request.user.has_perm("durable.view_schedule")

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("action"))
    def action_label(self, event):
        return label(ScheduleAction, event.action)

    @admin.display(description=gettext_lazy("actor"))
    def actor_cell(self, event):
        return data(event.actor)

    @admin.display(description=gettext_lazy("detail"))
    def detail_json(self, event):
        return json_block(event.detail, limit=1500)


@admin.register(Schedule)
class ScheduleAdmin(admin.ModelAdmin):
    form = ScheduleForm
    list_display = [
        "name",
        "workflow_name",
        "when",
        "timezone",
        "catch_up",
        "state",
        "next_fire_at_stamp",
        "last_fired_at_stamp",
        "last_run",
    ]
    list_filter = ["paused", "catch_up", "workflow_name"]
    search_fields = ["name", "workflow_name"]
    actions = ["pause_selected", "resume_selected"]
    inlines = [ScheduleEventInline]
    Media = EngineAssets

    def get_fields(self, request, obj=None):
        return EDITABLE if obj is None else [*EDITABLE, *BOOKKEEPING]

    def get_readonly_fields(self, request, obj=None):
        if obj is None:
            return []
        editable = [] if not self.has_change_permission(request, obj) else EDITABLE[1:]
        return [field for field in [*EDITABLE, *BOOKKEEPING] if field not in editable]

    def has_delete_permission(self, request, obj=None):
        return False  # its trail is kept (PROTECT); pause it instead

    def save_model(self, request, obj, form, change):
        """Through the services, so every write is checked and audited with its actor."""
        actor, audit = request_audit(request, via="admin")
        if change:
            changes = {
                field: form.checked[field] for field in EDITABLE[1:] if field in form.changed_data
            }
            saved = schedules.schedule_update(obj.name, actor=actor, audit=audit, **changes)
        else:
            checked = dict(form.checked)
            saved = schedules.schedule_create(
                checked.pop("name"),
                checked.pop("workflow_name"),
                cron_expression=checked.pop("cron"),
                **checked,
                actor=actor,
                audit=audit,
            )
        obj.pk, obj._state.adding, obj._state.db = saved.pk, False, saved._state.db

    def has_operate_permission(self, request):
        return request.user.has_perm(OPERATE_SCHEDULE_PERMISSION)

    next_fire_at_stamp = stamp_column("next_fire_at", gettext_lazy("next fire at"))
    last_fired_at_stamp = stamp_column("last_fired_at", gettext_lazy("last fired (occurrence)"))
    created_at_stamp = stamp_column("created_at", gettext_lazy("created at"))
    updated_at_stamp = stamp_column("updated_at", gettext_lazy("updated at"))

    @admin.display(description=gettext_lazy("when"), ordering="cron")
    def when(self, schedule):
        # cronsim explains a cron in English only: other languages read the expression alone.
        explained = cron.explain(schedule.cron) if (get_language() or "").startswith("en") else ""
        return format_html('<code translate="no">{}</code><div>{}</div>', schedule.cron, explained)

    @admin.display(description=gettext_lazy("state"), ordering="paused")
    def state(self, schedule):
        if schedule.paused:
            return badge("paused", pgettext("schedule state", "paused"))
        if schedule.last_error:  # a run's "failed" colour: it stays due until fixed or paused
            return format_html(
                '{}<div class="durable-stage" translate="no">{}</div>',
                badge("failed", pgettext("schedule state", "failing")),
                schedule.last_error,
            )
        return badge("active", pgettext("schedule state", "active"))

    @admin.display(description=gettext_lazy("last run"), ordering="last_run_id")
    def last_run(self, schedule):
        return run_link(schedule.last_run_id) if schedule.last_run_id else "-"

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def _each(self, request, queryset, done_message, call):
        """``done_message(count)``: what the action says it did to ``count`` schedules."""
        actor, audit = request_audit(request, via="admin")
        done = 0
        for name in queryset.values_list("name", flat=True):
            try:
                call(name, actor, audit)
                done += 1
            except DurableError as error:
                self.message_user(request, str(error), messages.WARNING)
        if done:
            self.message_user(request, done_message(done) % {"count": done}, messages.SUCCESS)

    @admin.action(description=gettext_lazy("Pause selected schedules"), permissions=["operate"])
    def pause_selected(self, request, queryset):
        self._each(
            request,
            queryset,
            lambda count: ngettext(
                "%(count)d schedule paused.", "%(count)d schedules paused.", count
            ),
            lambda name, actor, audit: schedules.schedule_pause(
                name, actor=actor, reason="paused from the admin", audit=audit
            ),
        )

    @admin.action(
        description=gettext_lazy("Resume selected schedules (from the next occurrence)"),
        permissions=["operate"],
    )
    def resume_selected(self, request, queryset):
        self._each(
            request,
            queryset,
            lambda count: ngettext(
                "%(count)d schedule resumed.", "%(count)d schedules resumed.", count
            ),
            lambda name, actor, audit: schedules.schedule_resume(name, actor=actor, audit=audit),
        )
