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


def register_approval_hold(workflow_name: str, fn: HoldFn) -> HoldFn:
    """Ask ``fn(case)`` before any case opened by ``workflow_name`` is approved (idempotent)."""
    holds = _holds.setdefault(workflow_name, [])
    if fn not in holds:
        holds.append(fn)
    return fn


def holds_for(case) -> list[str]:
    reasons = []
    for hold in _holds.get(case.workflow_name, []):
        try:
            reasons += [str(reason) for reason in hold(case) or []]
        except Exception:
            log.exception("approval hold %r failed for approval request %s", hold, case.pk)
            reasons.append(_("the check %(name)s could not run") % {"name": getattr(hold, "__name__", hold)})
    return reasons
