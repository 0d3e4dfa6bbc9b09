"""Case panels: the sections a case page shows, generic ones plus those a process registers.

A process registers a function per workflow name; it receives the ApprovalRequest and
returns Sections (a title, a template and its context). The case page renders generic
sections first (summary, findings), then the process's, then the run's timeline. A
panel that raises is shown as "unavailable" rather than taking the case page down.

A process also names its steps and signals for people (``register_timeline_labels``):
the timeline reads "Case prepared for review", not ``describe_for_review``.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.utils.text import slugify
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from durable.selectors import run_or_archived

log = logging.getLogger(__name__)


@dataclass
class Section:
    title: str
    template: str
    context: dict = field(default_factory=dict)
    key: str = ""  # a stable name for the page's markup (titles are translated)

    @property
    def slug(self) -> str:
        return self.key or slugify(str(self.title))


PanelFn = Callable[["ApprovalRequest"], list[Section]]  # noqa: F821

_panels: dict[str, list[PanelFn]] = {}


def register_case_panel(workflow_name: str, fn: PanelFn | None = None):
    """Show ``fn(approval_request)``'s sections on every case opened by ``workflow_name``.

    Usable as a call or a decorator. Registering the same function twice is a no-op, so
    an AppConfig.ready() that runs twice does no harm.
    """

    def register(panel: PanelFn) -> PanelFn:
        panels = _panels.setdefault(workflow_name, [])
        if panel not in panels:
            panels.append(panel)
        return panel

    return register(fn) if fn is not None else register


def unregister_case_panel(workflow_name: str, fn: PanelFn) -> None:
    panels = _panels.get(workflow_name, [])
    if fn in panels:
        panels.remove(fn)


_labels: dict[str, dict[str, str]] = {}

# The approvals steps every process that calls request_approval journals.
APPROVAL_LABELS = {
    "open_approval_request": _("Case opened for compliance"),
    "compliance_decision": _("Compliance decision"),
    "read_decision": _("Decision read"),
    "expire_approval_request": _("Case expired"),
}
KIND_LABELS = {
    "step": pgettext_lazy("journal kind", "step"),
    "signal": pgettext_lazy("journal kind", "signal"),
    "sleep": pgettext_lazy("journal kind", "timer"),
    "drain": pgettext_lazy("journal kind", "signal"),
    "now": pgettext_lazy("journal kind", "clock"),
    "uuid4": pgettext_lazy("journal kind", "identifier"),
    "random": pgettext_lazy("journal kind", "random value"),
    "patch": pgettext_lazy("journal kind", "version marker"),
}
STATUS_LABELS = {
    "completed": pgettext_lazy("journal status", "done"),
    "failed": pgettext_lazy("journal status", "failed"),
    "waiting": pgettext_lazy("journal status", "waiting"),
    "retrying": pgettext_lazy("journal status", "retrying"),
    "started": pgettext_lazy("journal status", "running"),
    "cancelled": pgettext_lazy("journal status", "cancelled"),
}
RUN_STATUS_LABELS = {
    "pending": pgettext_lazy("run status", "pending"),
    "running": pgettext_lazy("run status", "running"),
    "waiting": pgettext_lazy("run status", "waiting"),
    "completed": pgettext_lazy("run status", "completed"),
    "failed": pgettext_lazy("run status", "failed"),
    "cancelled": pgettext_lazy("run status", "cancelled"),
    "blocked": pgettext_lazy("run status", "blocked"),
}


def register_timeline_labels(workflow_name: str, labels: dict[str, str]) -> None:
    """Name ``workflow_name``'s steps and signals for reviewers: {journal name: label}.

    Labels are usually gettext_lazy strings, so they read in the reviewer's language. A name
    with no label is shown as it is journaled.
    """
    _labels.setdefault(workflow_name, {}).update(labels)


def timeline_label(workflow_name: str, name: str) -> str:
    label = _labels.get(workflow_name, {}).get(name) or APPROVAL_LABELS.get(name)
    return str(label) if label else name


@dataclass
class TimelineRow:
    position: int
    kind: str
    name: str
    label: str
    status: str
    status_label: str
    attempt: int
    at: object


FINDINGS_KEYS = ("findings", "validator_findings")
# What a finding recorded for its reader's language only: never shown as a detail.
FINDING_CODE_KEYS = ("code", "params")
_finding_readers: dict[str, Callable[[dict], dict]] = {}


def register_findings_reader(workflow_name: str, fn: Callable[[dict], dict]) -> None:
    """Show the findings of ``workflow_name``'s cases through ``fn(finding) -> finding | None``:
    a process that records findings with a code (and its params) shows them in the reader's
    language, while the case keeps the text it recorded; None folds one away from the page."""
    _finding_readers[workflow_name] = fn


_summaries: dict[str, Callable] = {}
_workflow_labels: dict[str, str] = {}


def register_workflow_label(workflow_name: str, label) -> None:
    """What reviewers call ``workflow_name``'s process (a gettext_lazy string)."""
    _workflow_labels[workflow_name] = label


def workflow_label(workflow_name: str) -> str:
    label = _workflow_labels.get(workflow_name)
    return str(label) if label else workflow_name


_titles: dict[str, Callable] = {}


def register_title(workflow_name: str, fn: Callable) -> None:
    """Write ``workflow_name``'s case titles with ``fn(case) -> str`` in the reader's language
    (the stored title stays as recorded: search, the API and the audit use it)."""
    _titles[workflow_name] = fn


def title_for(case) -> str:
    fn = _titles.get(case.workflow_name)
    if fn is None:
        return case.title
    try:
        return fn(case) or case.title
    except Exception:  # a summary of an unexpected shape: the recorded title
        log.exception("case title for %s failed", case.pk)
        return case.title


def register_summary(workflow_name: str, fn: Callable) -> None:
    """Show ``fn(case) -> [(label, value)]`` as the summary of ``workflow_name``'s cases instead
    of the summary's raw keys: labels in the reader's language, and nothing a process panel
    already shows (one block, not two)."""
    _summaries[workflow_name] = fn


def summary_section(case) -> list[Section]:
    if case.workflow_name in _summaries:
        facts = [
            (label, value)
            for label, value in _summaries[case.workflow_name](case)
            if value not in ("", None, [], {})
        ]
        return [
            Section(
                _("Summary"),
                "approvals/panels/summary.html",
                {"facts": facts, "case": case, "translated": True},
                key="summary",
            )
        ]
    facts = [
        (key.replace("_", " "), value)
        for key, value in (case.summary or {}).items()
        if key not in FINDINGS_KEYS and value not in ("", None, [], {})
    ]  # nothing said: no row
    return [
        Section(
            _("Summary"),
            "approvals/panels/summary.html",
            {"facts": facts, "case": case},
            key="summary",
        )
    ]


def _finding(item) -> dict:
    """One finding as {"check", "result", "detail"}: whatever shape a validator recorded, a line
    a reviewer can read (a check name, its result, and the rest as "key: value" pairs)."""
    if isinstance(item, dict):
        rest = {
            key: value
            for key, value in item.items()
            if key not in ("check", "result", *FINDING_CODE_KEYS)
        }
        return {
            "check": str(item.get("check", "")).replace("_", " "),
            "result": item.get("result", ""),
            "detail": [(key.replace("_", " "), value) for key, value in rest.items()],
        }
    return {"check": "", "result": item, "detail": []}


def findings_section(case) -> list[Section]:
    summary = case.summary or {}
    findings = next((summary[key] for key in FINDINGS_KEYS if key in summary), None)
    if not findings:
        return []
    if isinstance(findings, dict):
        findings = [{"check": key, "result": value} for key, value in findings.items()]
    elif not isinstance(findings, list):
        findings = [findings]
    reader = _finding_readers.get(case.workflow_name)
    if reader:  # each read once; None folds a finding away (one the summary already says)
        findings = [
            read
            for read in (reader(item) if isinstance(item, dict) else item for item in findings)
            if read is not None
        ]
    if not findings:
        return []
    return [
        Section(
            _("Validator findings"),
            "approvals/panels/findings.html",
            {"findings": [_finding(item) for item in findings]},
            key="validator-findings",
        )
    ]


# The engine's own bookkeeping (version markers, search attributes, recorded clock readings
# and random values, drained buffers): the admin's run page shows them, reviewers do not.
ENGINE_KINDS = {"patch", "attributes", "now", "uuid4", "random", "drain"}


def timeline_rows(case) -> list[TimelineRow]:
    """The run's journal as reviewers read it: labelled steps and signals, statuses in words,
    the engine's bookkeeping folded away."""
    from approvals.selectors import approval_timeline

    return [
        TimelineRow(
            position=entry.position,
            kind=str(KIND_LABELS.get(entry.kind, entry.kind)),
            name=entry.name,
            label=timeline_label(case.workflow_name, entry.name),
            status=entry.status,
            status_label=str(STATUS_LABELS.get(entry.status, entry.status)),
            attempt=entry.attempt,
            at=entry.updated_at,
        )
        for entry in approval_timeline(case)
        if entry.kind not in ENGINE_KINDS
    ]


def waiting_shown(workflow_name: str, waiting_for: str) -> str:
    """What a waiting run waits for, in the reader's words: its signals by their labels, a
    timer, its turn at a shared limit (the engine's own spelling stays on the admin's run page)."""
    if not waiting_for:
        return ""
    if waiting_for.startswith("signal:"):
        return " / ".join(
            timeline_label(workflow_name, n) for n in waiting_for.removeprefix("signal:").split("|")
        )
    if waiting_for == "sleep":
        return str(_("a timer"))
    if waiting_for.startswith("limit:"):
        return str(_("its turn at a shared limit"))
    if waiting_for.startswith("child:"):
        return str(_("a process it started"))
    return waiting_for


def timeline_section(case) -> list[Section]:
    run = run_or_archived(case.run_id)
    return [
        Section(
            _("Process timeline"),
            "approvals/panels/timeline.html",
            {
                "entries": timeline_rows(case),
                "run": run,
                "waiting": waiting_shown(case.workflow_name, getattr(run, "waiting_for", "") or ""),
                "run_status": str(RUN_STATUS_LABELS.get(run.status, run.status)),
            },
            key="process-timeline",
        )
    ]


def _safe(panel: PanelFn, case) -> list[Section]:
    try:
        return list(panel(case) or [])
    except Exception:
        log.exception("case panel %r failed for approval request %s", panel, case.pk)
        name = getattr(panel, "__name__", repr(panel))
        return [
            Section(name.replace("_", " "), "approvals/panels/unavailable.html", {"panel": name})
        ]


def sections_for(case) -> list[Section]:
    """Every section of a case page, in display order."""
    sections = summary_section(case) + findings_section(case)
    for panel in _panels.get(case.workflow_name, []):
        sections += _safe(panel, case)
    return sections + timeline_section(case)
