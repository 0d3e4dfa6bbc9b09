"""What every page of the engine's admin shows the same way: status badges, JSON, times,
and history rows that are never added, edited or deleted.

Stored codes stay codes; what a badge or a column says is the code's translated label.
"""

import json

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import slugify
from django.utils.translation import ngettext

from durable.models import RunStatus
from durable.templatetags.durable_admin import stamp


class EngineAssets:
    """The stylesheet and script of the engine's admin pages (badges, the run page's tables and
    its confirm): files, since the site's Content-Security-Policy refuses inline ones."""

    css = {"all": ["durable/admin.css"]}
    js = ["durable/admin.js"]


def label(choices, code: str) -> str:
    """The translated label of a stored ``code`` of ``choices``; an unknown code as it is
    (a row written by an older engine still reads)."""
    return str(choices(code).label) if code in choices.values else code


def badge(status: str, text: str | None = None):
    """A badge coloured for ``status`` (durable/admin.css), saying ``text`` (by default the run
    status's label)."""
    return format_html(
        '<span class="durable-badge durable-badge-{}">{}</span>',
        slugify(status),
        label(RunStatus, status) if text is None else text,
    )


def pretty_json(value, *, limit: int = 4000) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    if len(text) <= limit:
        return text
    more = ngettext("(%(count)d more character)", "(%(count)d more characters)", len(text) - limit)
    return text[:limit] + "\n… " + more % {"count": len(text) - limit}


def stamp_column(field: str, description):
    """A column or read-only field showing a time to the second with its zone (sortable)."""

    @admin.display(description=description, ordering=field)
    def column(model_admin, obj):
        moment = getattr(obj, field)
        return stamp(moment) if moment is not None else "-"

    return column


def data(value):
    """A cell of data (an id, a workflow or signal name, JSON): never translated, and marked
    so for the browser's translator and the language checks."""
    return format_html('<span translate="no">{}</span>', value)


def json_block(value, *, limit: int = 4000):
    return format_html('<pre translate="no">{}</pre>', pretty_json(value, limit=limit))


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that are history: shown, never added, edited or deleted from the admin."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def run_admin_url(run_id: str) -> str:
    return reverse("admin:durable_workflowrun_change", args=[quote(run_id)])


def run_link(run_id: str):
    """A link to a run's admin page, its id as data (ids may hold '/' and ':': quoted)."""
    return format_html('<a href="{}" translate="no">{}</a>', run_admin_url(run_id), run_id)
