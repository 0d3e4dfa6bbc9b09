"""Segregation of duties: what a person already did to a case's process or its evidence,
which keeps them from deciding it (approve, reject or send back).

Reads only. The run's actions come from durable's audit trail through its selector; the
case's subject and evidence (a company and its documents, say) come from the resolver its
process registers, and their changes from the admin's log. Approvals never imports a
process.
"""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from durable.selectors import run_actors

# Operator actions on a run that make its case someone else's to approve. "start" is left
# out: runs are started by customers' messages and schedules, not by a reviewer's hand.
# A reviewer's own decision signal is recorded as "reviewer:<name>", never as the bare
# username, so deciding an earlier case of the same run does not count here.
RUN_ACTIONS = {
    "retry": gettext_lazy("retried this case's run"),
    "wake": gettext_lazy("woke this case's run"),
    "signal": gettext_lazy("signalled this case's run"),
    "cancel": gettext_lazy("cancelled this case's run"),
}

# The rows a case is about: one (its subject) or several (the subject and its evidence).
SubjectFn = Callable[["ApprovalRequest"], "models.Model | list[models.Model] | None"]  # noqa: F821

_subjects: dict[str, SubjectFn] = {}


def register_case_subject(workflow_name: str, resolve: SubjectFn) -> SubjectFn:
    """``resolve(case)`` returns the row a case of ``workflow_name`` is about, or the rows (its
    subject and its evidence), or None, so that whoever added or changed one of them in the
    admin cannot decide the case. Registering twice is a no-op."""
    _subjects[workflow_name] = resolve
    return resolve


@dataclass(frozen=True)
class PriorAction:
    """Something a person did to a case's process: ``what`` reads after "you"."""

    what: str
    at: datetime


def prior_actions(case, user) -> list[PriorAction]:
    """What ``user`` did to this case's run or subject that bars them from approving it, oldest
    first."""
    username = user.get_username()
    found = [
        PriorAction(str(RUN_ACTIONS[event.action]), event.at)
        for event in run_actors(case.run_id, actions=tuple(RUN_ACTIONS))
        if event.actor == username
    ]
    resolve = _subjects.get(case.workflow_name)
    rows = resolve(case) if resolve is not None else None
    by_model: dict[type, dict[str, models.Model]] = {}
    for row in [] if rows is None else rows if isinstance(rows, (list, tuple)) else [rows]:
        by_model.setdefault(type(row), {})[str(row.pk)] = row
    for model, rows_by_pk in by_model.items():  # one query per model, however many rows
        changes = LogEntry.objects.filter(
            user_id=user.pk,
            content_type=ContentType.objects.get_for_model(model),
            object_id__in=list(rows_by_pk),
            action_flag__in=[ADDITION, CHANGE],
        ).order_by("action_time", "id")
        for entry in changes:
            row = rows_by_pk[entry.object_id]
            label = f"{row._meta.verbose_name} {row}"
            found.append(
                PriorAction(
                    (
                        _("added %(what)s in the admin")
                        if entry.action_flag == ADDITION
                        else _("changed %(what)s in the admin")
                    )
                    % {"what": label},
                    entry.action_time,
                )
            )
    return sorted(found, key=lambda action: action.at)


def conflict_message(case, actions: list[PriorAction]) -> str:
    """The refusal, naming the latest earlier action (and how many others there were)."""
    latest = actions[-1]
    others = len(actions) - 1
    more = (
        ngettext(" (and %(count)s other action)", " (and %(count)s other actions)", others)
        % {"count": others}
        if others
        else ""
    )
    when = latest.at.astimezone(UTC)
    return _(
        "You %(what)s at %(when)s%(more)s; case #%(id)s needs a reviewer who did not act on it."
    ) % {"what": latest.what, "when": f"{when:%Y-%m-%d %H:%M} UTC", "more": more, "id": case.pk}


def approval_conflict(case, user) -> str:
    """Why ``user`` may not decide ``case`` (segregation of duties), or "" if they may."""
    actions = prior_actions(case, user)
    return conflict_message(case, actions) if actions else ""
