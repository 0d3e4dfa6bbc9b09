"""Case panels: the sections a case page shows, generic ones plus those a process registers.

A process registers a function per workflow name; it receives the ApprovalRequest and
returns Sections (a title, a template and its context). The case page renders generic
sections first (summary, findings), then the process's, then the run's timeline. A
panel that raises is shown as "unavailable" rather than taking the case page down.
"""
import logging
from dataclasses import dataclass, field
from typing import Callable

from durable.selectors import run_or_archived

log = logging.getLogger(__name__)


@dataclass
class Section:
    title: str
    template: str
    context: dict = field(default_factory=dict)


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


FINDINGS_KEYS = ("findings", "validator_findings")


def summary_section(case) -> list[Section]:
    facts = [(key.replace("_", " "), value) for key, value in (case.summary or {}).items()
             if key not in FINDINGS_KEYS]
    return [Section("Summary", "approvals/panels/summary.html", {"facts": facts, "case": case})]


def findings_section(case) -> list[Section]:
    summary = case.summary or {}
    findings = next((summary[key] for key in FINDINGS_KEYS if key in summary), None)
    if not findings:
        return []
    if isinstance(findings, dict):
        findings = [{"check": key, "result": value} for key, value in findings.items()]
    elif not isinstance(findings, list):
        findings = [findings]
    return [Section("Validator findings", "approvals/panels/findings.html", {"findings": findings})]


def timeline_section(case) -> list[Section]:
    from approvals.selectors import approval_timeline

    return [Section("Process timeline", "approvals/panels/timeline.html",
                    {"entries": approval_timeline(case), "run": run_or_archived(case.run_id)})]


def _safe(panel: PanelFn, case) -> list[Section]:
    try:
        return list(panel(case) or [])
    except Exception:
        log.exception("case panel %r failed for approval request %s", panel, case.pk)
        name = getattr(panel, "__name__", repr(panel))
        return [Section(name.replace("_", " "), "approvals/panels/unavailable.html", {"panel": name})]


def sections_for(case) -> list[Section]:
    """Every section of a case page, in display order."""
    sections = summary_section(case) + findings_section(case)
    for panel in _panels.get(case.workflow_name, []):
        sections += _safe(panel, case)
    return sections + timeline_section(case)
