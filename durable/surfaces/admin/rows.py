"""The rows of a run's page (journal, signals, audit trail), live or archived, as the
template shows them: codes turned into translated labels, data left as it was written."""

from django.utils.formats import number_format
from django.utils.translation import gettext as _

from durable.models import AuditAction, EntryKind, EntryStatus
from durable.surfaces.admin.display import badge, label, pretty_json


def journal_row(entry) -> dict:
    error = entry.error or {}
    duration = entry.duration
    return {
        "entry": entry,
        "kind": label(EntryKind, entry.kind),
        "badge": badge(entry.status, label(EntryStatus, entry.status)),
        # seconds with a dot or a comma, as the reader's language writes them
        "duration": _("%(seconds)s s") % {"seconds": number_format(duration.total_seconds(), 3)}
        if duration is not None
        else "",
        "result": pretty_json(entry.result, limit=1500) if entry.result is not None else "",
        "error": f"{error.get('type', 'Error')}: {error.get('message', '')}" if error else "",
        "traceback": error.get("traceback", ""),
    }


def audit_row(event) -> dict:
    return {"event": event, "action": label(AuditAction, event.action)}
