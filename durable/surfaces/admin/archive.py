"""The admin of archived runs: the same run page as a live run, read-only, from the archive.

Registered by durable/surfaces/admin/__init__.py. Nothing here can change a row: the archive tables
are history, and an archived run takes no signal, cancel, retry or wake.
"""

from django.contrib import admin
from django.contrib.admin.utils import unquote
from django.db.models import TextField
from django.db.models.functions import Cast
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from durable import selectors
from durable.models.archive import ArchiveBatch, ArchivedRun
from durable.surfaces.admin.display import (
    EngineAssets,
    ReadOnlyAdmin,
    badge,
    data,
    json_block,
    stamp_column,
)
from durable.surfaces.admin.rows import audit_row, journal_row
from durable.surfaces.admin.search import RunSearch
from durable.templatetags.durable_admin import breakable

VIEW_RUNS_PERMISSION = "durable.view_workflowrun"


class ArchiveViewPermission:
    """Whoever may view runs may view archived runs (no second permission to hand out)."""

    def has_view_permission(self, request, obj=None):
        return request.user.has_perm(VIEW_RUNS_PERMISSION) or super().has_view_permission(
            request, obj
        )

    def has_module_permission(self, request):
        return request.user.has_perm(VIEW_RUNS_PERMISSION) or super().has_module_permission(request)


@admin.register(ArchivedRun)
class ArchivedRunAdmin(ArchiveViewPermission, RunSearch, ReadOnlyAdmin):
    list_display = [
        "run_id",
        "workflow",
        "status_badge",
        "finished_at_stamp",
        "archived_at_stamp",
        "where",
    ]
    list_filter = ["status", "workflow_name", "workflow_version"]
    # As the live runs' list: a part of the id or of the attributes (search.py).
    search_fields = ["id", "attributes_text"]
    ordering = ["-finished_at"]
    list_per_page = 100
    show_full_result_count = False
    change_form_template = "admin/durable/workflowrun/change_form.html"
    Media = EngineAssets
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "run_id",
                    "workflow",
                    "status_badge",
                    "advances",
                    "created_at_stamp",
                    "finished_at_stamp",
                    "archived_at_stamp",
                    "where",
                ]
            },
        ),
        (gettext_lazy("Search attributes"), {"fields": ["attributes_json"]}),
        (
            gettext_lazy("Input, result, error"),
            {"fields": ["input_json", "result_json", "error_json"]},
        ),
    ]
    readonly_fields = [
        "run_id",
        "workflow",
        "status_badge",
        "advances",
        "created_at_stamp",
        "finished_at_stamp",
        "archived_at_stamp",
        "where",
        "attributes_json",
        "input_json",
        "result_json",
        "error_json",
    ]

    created_at_stamp = stamp_column("created_at", gettext_lazy("created at"))
    finished_at_stamp = stamp_column("finished_at", gettext_lazy("finished at"))
    archived_at_stamp = stamp_column("archived_at", gettext_lazy("archived at"))

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .select_related("batch")
            .annotate(attributes_text=Cast("attributes", TextField()))
        )

    def get_object(self, request, object_id, from_field=None):
        run = super().get_object(request, object_id, from_field)
        return selectors.archived_run_full(run) if run is not None else None

    @admin.display(description=gettext_lazy("id"), ordering="id")
    def run_id(self, run):
        return data(breakable(run.id))

    @admin.display(description=gettext_lazy("workflow"), ordering="workflow_name")
    def workflow(self, run):
        return data(f"{run.workflow_name} v{run.workflow_version}")

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, run):
        return badge(run.status)

    @admin.display(description=gettext_lazy("kept in"))
    def where(self, run):
        return data(run.batch.export_file) if run.batch.export_file else _("the archive tables")

    @admin.display(description=gettext_lazy("attributes"))
    def attributes_json(self, run):
        return json_block(run.attributes) if run.attributes else "-"

    @admin.display(description=gettext_lazy("input"))
    def input_json(self, run):
        return json_block(run.input)

    @admin.display(description=gettext_lazy("result"))
    def result_json(self, run):
        return json_block(run.result) if run.result is not None else "-"

    @admin.display(description=gettext_lazy("error"))
    def error_json(self, run):
        return json_block(run.error) if run.error is not None else "-"

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = get_object_or_404(ArchivedRun.objects.select_related("batch"), pk=unquote(object_id))
        extra_context = {
            **(extra_context or {}),
            "run": run,
            "journal": [journal_row(entry) for entry in selectors.archived_journal(run)],
            "signals": selectors.archived_signals(run),
            "audit_events": [audit_row(event) for event in selectors.archived_audit(run)],
            "can_operate": False,
        }
        return super().change_view(request, object_id, form_url, extra_context)


@admin.register(ArchiveBatch)
class ArchiveBatchAdmin(ArchiveViewPermission, ReadOnlyAdmin):
    list_display = ["token", "runs", "actor", "finished_before", "export_file", "created_at"]
    readonly_fields = [
        "token",
        "runs",
        "actor",
        "finished_before",
        "export_file",
        "export_sha256",
        "export_bytes",
        "created_at",
    ]
    ordering = ["-created_at"]
