"""Template helpers for the reviewer UI: the SLA countdown, JSON values shown as text, and the
audit trail's codes in the reader's language."""

import json

from django import template
from django.utils.translation import gettext as _

from durable import clock

register = template.Library()


def _span(seconds: float) -> str:
    seconds = int(abs(seconds))
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m"


@register.simple_tag
def sla(case) -> dict:
    """{'text': 'due in 2d 3h' | 'overdue by 4h 10m', 'level': 'ok' | 'soon' | 'overdue'}, in the
    active language."""
    left = (case.due_at - clock.now()).total_seconds()
    if left <= 0:
        return {"text": _("overdue by %(span)s") % {"span": _span(left)}, "level": "overdue"}
    return {
        "text": _("due in %(span)s") % {"span": _span(left)},
        "level": "soon" if left < 8 * 3600 else "ok",
    }


@register.filter
def as_text(value) -> str:
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, indent=1)
    return "" if value is None else str(value)


@register.filter
def action_label(code: str) -> str:
    """An audit row's action in the active language; an unknown code as it is."""
    from approvals.models import AUDIT_ACTIONS

    return AUDIT_ACTIONS.get(code, code)


@register.filter
def case_title(case) -> str:
    """A case's title in the reader's language, when its process registered how to write it
    (approvals.panels.register_title); the stored title otherwise."""
    from approvals.panels import title_for

    return title_for(case)


@register.filter
def workflow_label(name: str) -> str:
    """A process's name for people (approvals.panels.register_workflow_label); the code
    otherwise."""
    from approvals.panels import workflow_label as label

    return label(name)


@register.filter
def actor_label(actor: str) -> str:
    """Who did it, in the active language: the engine itself, a customer on WhatsApp, a
    command line; a username as it is."""
    actor = str(actor or "")
    if actor == "system" or actor.startswith("system ("):
        return _("the system") + actor.removeprefix("system")
    if actor.startswith("whatsapp:"):
        return _("the customer (WhatsApp %(id)s)") % {"id": actor.removeprefix("whatsapp:")}
    return actor


@register.filter
def status_label(code: str) -> str:
    """A case status code ("claimed") in the active language; empty stays empty."""
    from approvals.models import ApprovalStatus

    return ApprovalStatus(code).label if code in ApprovalStatus.values else code


@register.filter
def is_mapping(value) -> bool:
    return isinstance(value, dict)


@register.simple_tag
def supervises(user) -> bool:
    """Whether to show the supervisor's pages in the navigation (the views check again)."""
    from approvals.services import is_supervisor

    return is_supervisor(user)
