"""The admin of archived runs: the same run page as a live run, read-only, from the archive.

Registered by durable/surfaces/admin/__init__.py. Nothing here can change a row: the archive tables are
history, and an archived run takes no signal, cancel, retry or wake.
"""
from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import TextField
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404
from django.utils.html import format_html

from durable import selectors
from durable.surfaces.admin.display import ReadOnlyAdmin, badge, pretty_json, stamp_column
from durable.surfaces.admin.runs import WorkflowRunAdmin
from durable.models.archive import ArchiveBatch, ArchivedRun
from durable.templatetags.durable_admin import breakable

VIEW_RUNS_PERMISSION = "durable.view_workflowrun"


class ArchiveViewPermission:
    """Whoever may view runs may view archived runs (no second permission to hand out)."""

    def has_view_permission(self, request, obj=None):
        return (request.user.has_perm(VIEW_RUNS_PERMISSION)
                or super().has_view_permission(request, obj))

    def has_module_permission(self, request):
        return request.user.has_perm(VIEW_RUNS_PERMISSION) or super().has_module_permission(request)


@admin.register(ArchivedRun)
class ArchivedRunAdmin(ArchiveViewPermission, ReadOnlyAdmin):
    list_display = ["run_id", "workflow", "status_badge", "finished_at_stamp", "archived_at_stamp", "where"]
    list_filter = ["status", "workflow_name", "workflow_version"]
    search_fields = ["=id", "attributes_text"]
    ordering = ["-finished_at"]
    list_per_page = 100
    show_full_result_count = False
    change_form_template = "admin/durable/workflowrun/change_form.html"
    fieldsets = [
        (None, {"fields": ["id", "workflow", "status_badge", "advances", "created_at_stamp",
                           "finished_at_stamp", "archived_at_stamp", "where"]}),
        ("Search attributes", {"fields": ["attributes_json"]}),
        ("Input, result, error", {"fields": ["input_json", "result_json", "error_json"]}),
    ]
    readonly_fields = ["id", "workflow", "status_badge", "advances", "created_at_stamp", "finished_at_stamp",
                       "archived_at_stamp", "where", "attributes_json", "input_json", "result_json",
                       "error_json"]

    created_at_stamp = stamp_column("created_at", "created at")
    finished_at_stamp = stamp_column("finished_at", "finished at")
    archived_at_stamp = stamp_column("archived_at", "archived at")

    def get_queryset(self, request):
        return (super().get_queryset(request).select_related("batch")
                .annotate(attributes_text=Cast("attributes", TextField())))

    def get_object(self, request, object_id, from_field=None):
        run = super().get_object(request, object_id, from_field)
        return selectors.archived_run_full(run) if run is not None else None

    @admin.display(description="id", ordering="id")
    def run_id(self, run):
        return breakable(run.id)

    @admin.display(description="workflow", ordering="workflow_name")
    def workflow(self, run):
        return f"{run.workflow_name} v{run.workflow_version}"

    @admin.display(description="status", ordering="status")
    def status_badge(self, run):
        return badge(run.status)

    @admin.display(description="kept in")
    def where(self, run):
        return run.batch.export_file or "the archive tables"

    @admin.display(description="attributes")
    def attributes_json(self, run):
        return format_html("<pre>{}</pre>", pretty_json(run.attributes)) if run.attributes else "-"

    @admin.display(description="input")
    def input_json(self, run):
        return format_html("<pre>{}</pre>", pretty_json(run.input))

    @admin.display(description="result")
    def result_json(self, run):
        return format_html("<pre>{}</pre>", pretty_json(run.result)) if run.result is not None else "-"

    @admin.display(description="error")
    def error_json(self, run):
        return format_html("<pre>{}</pre>", pretty_json(run.error)) if run.error is not None else "-"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = get_object_or_404(ArchivedRun.objects.select_related("batch"), pk=unquote(object_id))
        extra_context = {
            **(extra_context or {}),
            "run": run,
            "journal": [WorkflowRunAdmin._timeline_row(entry) for entry in selectors.archived_journal(run)],
            "signals": selectors.archived_signals(run),
            "audit_events": selectors.archived_audit(run),
            "can_operate": False,
        }
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(ArchiveBatch)
class ArchiveBatchAdmin(ArchiveViewPermission, ReadOnlyAdmin):
    list_display = ["token", "runs", "actor", "finished_before", "export_file", "created_at"]
    readonly_fields = ["token", "runs", "actor", "finished_before", "export_file", "export_sha256",
                       "export_bytes", "created_at"]
    ordering = ["-created_at"]
