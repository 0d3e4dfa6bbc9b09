"""Approval holds: reasons a process gives why a case cannot be approved right now.

A process registers a function per workflow name; it receives the ApprovalRequest and
returns sentences ("contrato.pdf cannot be opened: ..."). While any is returned, the case
page disables Approve and shows them, and ``approval_decide`` refuses an approval (reject
and "more documents" stay possible). A hold function that raises holds the case too: an
approval must not go through on a check that could not run.
"""
import logging
from typing import Callable

from django.utils.translation import gettext as _

log = logging.getLogger(__name__)

HoldFn = Callable[["ApprovalRequest"], list[str]]  # noqa: F821

_holds: dict[str, list[HoldFn]] = {}
# Holds a supervisor may override on one case, with a reason (approval_hold_override).
_overridable: set[str] = set()


def register_approval_hold(workflow_name: str, fn: HoldFn, *, overridable: bool = False) -> HoldFn:
    """Ask ``fn(case)`` before any case opened by ``workflow_name`` is approved (idempotent).
    ``overridable``: a supervisor may lift it on one case, with a reason, audited."""
    holds = _holds.setdefault(workflow_name, [])
    if fn not in holds:
        holds.append(fn)
    if overridable:
        _overridable.add(hold_name(fn))
    return fn


def hold_name(fn: HoldFn) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


def overridable_holds_for(case) -> list[str]:
    """The names of the holds on ``case`` now that a supervisor may override."""
    overridden = overrides_of(case)
    return [hold_name(hold) for hold in _holds.get(case.workflow_name, [])
            if hold_name(hold) in _overridable and hold_name(hold) not in overridden and _reasons(hold, case)]


def overrides_of(case) -> set[str]:
    """The holds a supervisor overrode on this case (its audit rows say so)."""
    return {name for row in case.audit.filter(action="override_hold") for name in row.detail.get("holds", [])}


def _reasons(hold: HoldFn, case) -> list[str]:
    try:
        return [str(reason) for reason in hold(case) or []]
    except Exception:
        return ["?"]


def holds_for(case) -> list[str]:
    reasons = []
    overridden = overrides_of(case) if _overridable else set()
    for hold in _holds.get(case.workflow_name, []):
        if hold_name(hold) in overridden:
            continue
        try:
            reasons += [str(reason) for reason in hold(case) or []]
        except Exception:
            log.exception("approval hold %r failed for approval request %s", hold, case.pk)
            reasons.append(_("the check %(name)s could not run") % {"name": getattr(hold, "__name__", hold)})
    return reasons
