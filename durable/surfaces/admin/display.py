"""What every page of the engine's admin shows the same way: status badges, JSON, times,
and history rows that are never added, edited or deleted."""
import json

from django.contrib import admin
from django.utils.html import format_html

from durable.models import EntryStatus, RunStatus
from durable.templatetags.durable_admin import stamp

STATUS_COLOURS = {
    RunStatus.PENDING: "#6c757d", RunStatus.RUNNING: "#0d6efd", RunStatus.WAITING: "#b8860b",
    RunStatus.COMPLETED: "#198754", RunStatus.FAILED: "#dc3545", RunStatus.CANCELLED: "#495057",
    RunStatus.BLOCKED: "#8b008b", RunStatus.CONTINUED: "#20798a",
    EntryStatus.RETRYING: "#fd7e14",
}


def badge(status: str):
    return format_html(
        '<span class="durable-badge" style="background:{};color:#fff;border-radius:8px;'
        'padding:1px 8px;font-size:11px;font-weight:bold;white-space:nowrap">{}</span>',
        STATUS_COLOURS.get(status, "#6c757d"), status)


def pretty_json(value, *, limit: int = 4000) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def stamp_column(field: str, description: str):
    """A column or read-only field showing a time to the second with its zone (sortable)."""
    @admin.display(description=description, ordering=field)
    def column(model_admin, obj):
        return stamp(getattr(obj, field))

    return column


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that are history: shown, never added, edited or deleted from the admin."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
