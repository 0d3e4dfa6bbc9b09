"""Approval holds: reasons a process gives why a case cannot be approved right now.

A process registers a function per workflow name; it receives the ApprovalRequest and
returns sentences ("contrato.pdf cannot be opened: ..."). While any is returned, the case
page disables Approve and shows them, and ``approval_decide`` refuses an approval (reject
and "more documents" stay possible). A hold function that raises holds the case too: an
approval must not go through on a check that could not run.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Hold:
    """One hold that applies to a case now: its name, what it says, and whether a supervisor
    may override it."""

    name: str
    reasons: tuple[str, ...]
    overridable: bool


def holds_on(case) -> list[Hold]:
    """The holds that apply to ``case`` now (each function asked once; those a supervisor
    overrode on it left out). A hold function that raises holds the case."""
    overridden = overrides_of(case) if _overridable else set()
    found = []
    for hold in _holds.get(case.workflow_name, []):
        name = hold_name(hold)
        if name in overridden:
            continue
        try:
            reasons = tuple(str(reason) for reason in hold(case) or [])
        except Exception:
            log.exception("approval hold %r failed for approval request %s", hold, case.pk)
            reasons = (
                _("the check %(name)s could not run") % {"name": getattr(hold, "__name__", hold)},
            )
        if reasons:
            found.append(Hold(name, reasons, name in _overridable))
    return found


def overrides_of(case) -> set[str]:
    """The holds a supervisor overrode on this case (its audit rows say so)."""
    return {
        name
        for row in case.audit.filter(action="override_hold")
        for name in row.detail.get("holds", [])
    }


def holds_for(case) -> list[str]:
    """What every hold on ``case`` says now."""
    return [reason for hold in holds_on(case) for reason in hold.reasons]
