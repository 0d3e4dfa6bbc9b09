"""Operators' view of approval requests: read-only, with decisions and the audit trail inline.

Status changes go through services (claim, decide, ...) only; the one admin action,
cancel, calls approval_cancel so it is audited like every other change.
"""
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.translation import gettext as _

from approvals import services
from durable.surfaces.admin import ReadOnlyAdmin, register_run_links
from approvals.errors import ApprovalError
from approvals.models import ApprovalAudit, ApprovalDecision, ApprovalRequest


class ReadOnlyInline(admin.TabularInline):
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class DecisionInline(ReadOnlyInline):
    model = ApprovalDecision
    fields = ["created_at", "reviewer", "outcome", "reason"]
    readonly_fields = fields


class AuditInline(ReadOnlyInline):
    model = ApprovalAudit
    fields = ["created_at", "actor", "action", "from_status", "to_status", "reason", "ip", "user_agent", "path"]
    readonly_fields = fields


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(admin.ModelAdmin):
    list_display = ["id", "title", "workflow_name", "risk", "status", "due_at", "assignee", "closed_by"]
    list_filter = ["status", "risk", "workflow_name", "candidate_groups"]
    search_fields = ["title", "subject_id", "run__id", "closed_by"]
    date_hierarchy = "created_at"
    inlines = [DecisionInline, AuditInline]
    actions = ["cancel_selected"]
    # Routing is the workflow's, changed only by reopening the case: read-only here too.
    readonly_fields = [f.name for f in ApprovalRequest._meta.fields] + ["candidate_groups"]

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.action(description="Cancel selected open requests (no signal is sent)",
                  permissions=["change"])
    def cancel_selected(self, request, queryset):
        cancelled = 0
        for case in queryset:
            try:
                services.approval_cancel(case.pk, actor=f"admin:{request.user.get_username()}",
                                         reason="cancelled in the admin",
                                         meta=services.RequestMeta.from_http(request))
                cancelled += 1
            except ApprovalError as exc:
                self.message_user(request, str(exc), messages.WARNING)
        self.message_user(request, f"{cancelled} request(s) cancelled.")


@admin.register(ApprovalAudit)
class ApprovalAuditAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "request", "actor", "action", "from_status", "to_status", "ip"]
    list_filter = ["action"]
    search_fields = ["actor", "request__title", "request__id"]
    readonly_fields = [f.name for f in ApprovalAudit._meta.fields]


@register_run_links
def run_cases(run, request) -> list[tuple[str, str]]:
    """From a run's admin page back to its compliance cases' reviewer pages (for reviewers)."""
    if not services.is_reviewer(request.user):
        return []
    return [(_("Compliance case #%(id)s (%(status)s)") % {"id": case.pk, "status": case.get_status_display()},
             reverse("approval_case", args=[case.pk]))
            for case in run.approval_requests.order_by("id")]
