"""Operators' view of approval requests: read-only, with decisions and the audit trail inline.

Status changes go through services (claim, decide, ...) only; the one admin action,
cancel, calls approval_cancel so it is audited like every other change. What a process or
a person wrote (titles, reasons, names) is shown as data, never translated; codes (an
audit action, a status) are shown by their translated label.
"""

from django.contrib import admin, messages
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from approvals import services
from approvals.errors import ApprovalError
from approvals.models import (
    AUDIT_ACTIONS,
    ApprovalAudit,
    ApprovalDecision,
    ApprovalRequest,
    ApprovalStatus,
)
from durable.surfaces.admin import ReadOnlyAdmin, data, json_block, register_run_links, run_link


def status_label(code: str) -> str:
    return ApprovalStatus(code).label if code in ApprovalStatus.values else code


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class DecisionInline(ReadOnlyInline):
    model = ApprovalDecision
    fields = ["created_at", "reviewer", "outcome", "rationale"]
    readonly_fields = fields

    @admin.display(description=gettext_lazy("rationale"))
    def rationale(self, decision):
        return data(decision.reason)


class AuditRows:
    """A case's audit row as the admin shows it: the action and statuses by their labels."""

    @admin.display(description=gettext_lazy("action"), ordering="action")
    def action_label(self, row):
        return AUDIT_ACTIONS.get(row.action, row.action)

    @admin.display(description=gettext_lazy("from status"))
    def from_label(self, row):
        return status_label(row.from_status)

    @admin.display(description=gettext_lazy("to status"))
    def to_label(self, row):
        return status_label(row.to_status)

    @admin.display(description=gettext_lazy("actor"), ordering="actor")
    def actor_cell(self, row):
        return data(row.actor)

    @admin.display(description=gettext_lazy("reason"))
    def reason_cell(self, row):
        return data(row.reason)

    @admin.display(description=gettext_lazy("browser"))
    def user_agent_cell(self, row):
        return data(row.user_agent)

    @admin.display(description=gettext_lazy("path"))
    def path_cell(self, row):
        return data(row.path)


class AuditInline(AuditRows, ReadOnlyInline):
    model = ApprovalAudit
    fields = [
        "created_at",
        "actor_cell",
        "action_label",
        "from_label",
        "to_label",
        "reason_cell",
        "ip",
        "user_agent_cell",
        "path_cell",
    ]
    readonly_fields = fields


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(admin.ModelAdmin):
    list_display = [
        "id",
        "title_cell",
        "workflow",
        "risk",
        "status",
        "due_at",
        "assignee",
        "closed_by_cell",
    ]
    list_filter = ["status", "risk", "workflow_name", "candidate_groups"]
    search_fields = ["title", "subject_id", "run__id", "closed_by"]
    date_hierarchy = "created_at"
    inlines = [DecisionInline, AuditInline]
    actions = ["cancel_selected"]
    # Routing is the workflow's, changed only by reopening the case: read-only here too.
    fields = [
        "run_cell",
        "workflow",
        "signal",
        "idempotency_key_cell",
        "title_cell",
        "summary_json",
        "subject_type_cell",
        "subject_cell",
        "risk",
        "required_approvals",
        "status",
        "due_at",
        "candidate_groups",
        "follow_up_at",
        "assignee",
        "claimed_at",
        "outcome",
        "closed_at",
        "closed_by_cell",
        "created_at",
        "updated_at",
    ]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description=gettext_lazy("run"), ordering="run_id")
    def run_cell(self, case):
        return run_link(case.run_id)

    @admin.display(description=gettext_lazy("title"), ordering="title")
    def title_cell(self, case):
        return data(case.title)

    @admin.display(description=gettext_lazy("workflow"), ordering="workflow_name")
    def workflow(self, case):
        return data(case.workflow_name)

    @admin.display(description=gettext_lazy("signal"))
    def signal(self, case):
        return data(case.signal_name)

    @admin.display(description=gettext_lazy("idempotency key"))
    def idempotency_key_cell(self, case):
        return data(case.idempotency_key)

    @admin.display(description=gettext_lazy("summary"))
    def summary_json(self, case):
        return json_block(case.summary)

    @admin.display(description=gettext_lazy("subject type"))
    def subject_type_cell(self, case):
        return data(case.subject_type)

    @admin.display(description=gettext_lazy("subject"))
    def subject_cell(self, case):
        return data(case.subject_id)

    @admin.display(description=gettext_lazy("closed by"), ordering="closed_by")
    def closed_by_cell(self, case):
        return data(case.closed_by)

    @admin.action(
        description=gettext_lazy("Cancel selected open requests (no signal is sent)"),
        permissions=["change"],
    )
    def cancel_selected(self, request, queryset):
        cancelled = 0
        for case in queryset:
            try:
                services.approval_cancel(
                    case.pk,
                    actor=f"admin:{request.user.get_username()}",
                    reason="cancelled in the admin",
                    meta=services.RequestMeta.from_http(request),
                )
                cancelled += 1
            except ApprovalError as exc:
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(
            request,
            ngettext("%(count)d request cancelled.", "%(count)d requests cancelled.", cancelled)
            % {"count": cancelled},
        )


class CaseActionFilter(admin.SimpleListFilter):
    title = gettext_lazy("action")
    parameter_name = "action"

    def lookups(self, request, model_admin):
        return list(AUDIT_ACTIONS.items())

    def queryset(self, request, queryset):
        return queryset.filter(action=self.value()) if self.value() else queryset


@admin.register(ApprovalAudit)
class ApprovalAuditAdmin(AuditRows, ReadOnlyAdmin):
    list_display = [
        "created_at",
        "request",
        "actor_cell",
        "action_label",
        "from_label",
        "to_label",
        "ip",
    ]
    list_filter = [CaseActionFilter]
    search_fields = ["actor", "request__title", "request__id"]
    fields = [
        "created_at",
        "request",
        "actor_cell",
        "action_label",
        "from_label",
        "to_label",
        "reason_cell",
        "ip",
        "user_agent_cell",
        "path_cell",
        "detail_json",
    ]
    readonly_fields = fields

    @admin.display(description=gettext_lazy("detail"))
    def detail_json(self, row):
        return json_block(row.detail)


@register_run_links
def run_cases(run, request) -> list[tuple[str, str]]:
    """From a run's admin page back to its compliance cases' reviewer pages (for reviewers)."""
    if not services.is_reviewer(request.user):
        return []
    return [
        (
            _("Compliance case #%(id)s (%(status)s)")
            % {"id": case.pk, "status": case.get_status_display()},
            reverse("approval_case", args=[case.pk]),
        )
        for case in run.approval_requests.order_by("id")
    ]
