"""Reads on runs for views, the admin, the API and tests."""

import math
from datetime import datetime
from functools import reduce
from operator import or_
from pathlib import Path
from typing import NamedTuple

from django.db import connection
from django.db.models import Q, QuerySet
from django.db.models.fields.json import KeyTransform
from django.utils.dateparse import parse_datetime

from durable import clock, sql
from durable.documents import PARTIAL, export_file_documents
from durable.errors import InvalidFork, RunNotFound, WorkflowNotFound
from durable.models import (
    ArchivedAuditEvent,
    ArchivedJournalEntry,
    ArchivedRun,
    ArchivedSignal,
    AuditEvent,
    EntryKind,
    EntryStatus,
    JournalEntry,
    Signal,
    WorkflowRun,
)
from durable.runtime import forks, registry
from durable.runtime.store import live


class RunActor(NamedTuple):
    """One audited action on a run: who (the actor as the service recorded it), what, when."""

    actor: str
    action: str
    at: datetime


class StepResult(NamedTuple):
    """One completed step of a run, as an app reads it."""

    name: str
    position: int
    at: datetime
    result: object


def run_get(run_id: str) -> WorkflowRun:
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


class ForkPreview(NamedTuple):
    """What ``services.run_fork`` would do, for a confirmation: the entries it keeps, the
    one it runs again first (None at the journal's end), the signals it takes again, or
    why it is refused (``refusal``, and nothing else is filled)."""

    run: WorkflowRun
    at_position: int
    kept: list
    first_again: JournalEntry | None
    signals: list
    refusal: str


def run_fork_preview(run_id: str, at_position: int) -> ForkPreview:
    run = run_get(run_id)
    journal = list(JournalEntry.objects.filter(run_id=run_id).order_by("position"))
    try:
        kept = forks.kept_entries(run_id, journal, at_position)
    except InvalidFork as refusal:
        return ForkPreview(run, at_position, [], None, [], str(refusal))
    first_again = next((entry for entry in journal if entry.position == at_position), None)
    return ForkPreview(
        run, at_position, kept, first_again, forks.signals_taken_again(run_id, at_position), ""
    )


def run_current(run_id: str) -> WorkflowRun:
    """The newest run of the chain ``run_id`` is in: the run itself, unless it continued as
    new (a provider only knows ``billing:7``; its successors are ``billing:7~2``...), also
    once the chain's first runs were archived. RunNotFound if none is live."""
    return live.current_run(run_id)


def run_chain(run: WorkflowRun) -> list[str]:
    """Ids of the runs of ``run``'s continue-as-new chain, oldest first ([] for a run
    that is in none)."""
    if run.continued_as_id is None and not run.chain_root:
        return []
    root = run.chain_root or run.id
    later = list(
        WorkflowRun.objects.filter(chain_root=root)
        .order_by("created_at", "id")
        .values_list("id", flat=True)
    )
    return [root, *later]


def run_forks(run_id: str) -> list[tuple[str, int]]:
    """(id, position) of each run forked from this one, oldest first."""
    return list(
        WorkflowRun.objects.filter(forked_from_id=run_id)
        .order_by("created_at", "id")
        .values_list("id", "fork_position")
    )


def runs_started_since(run_ids, since) -> int:
    """How many of ``run_ids`` were started at or after ``since`` (archived runs are older)."""
    return WorkflowRun.objects.filter(id__in=list(run_ids), created_at__gte=since).count()


def run_exists(run_id: str) -> bool:
    """Whether a live run has this id (an archived one does not count)."""
    return WorkflowRun.objects.filter(pk=run_id).exists()


def run_timers(run_id: str) -> int:
    """How many of the run's sleeps and step back-offs are still to end: what a wake ends
    now (a wait for a signal is never ended early, so it is not one)."""
    return JournalEntry.objects.filter(
        run_id=run_id,
        wake_at__gt=clock.now(),
        kind__in=[EntryKind.SLEEP, EntryKind.STEP],
        status__in=[EntryStatus.WAITING, EntryStatus.RETRYING],
    ).count()


def run_signal_wait_only(run_id: str) -> str:
    """What the run waits for when a wake can change nothing on it ("" otherwise): it has
    no sleep or back-off to end, and its wait is not for a limit's turn (a wake lets a
    limit's waiter look again; a pending run is sent)."""
    waiting_for = (
        WorkflowRun.objects.filter(pk=run_id).values_list("waiting_for", flat=True).first()
    )
    if not waiting_for or waiting_for.startswith("limit:") or run_timers(run_id):
        return ""
    return waiting_for


def runs_started_by(run_id: str) -> list[WorkflowRun]:
    """The child runs this run started, by id."""
    return list(WorkflowRun.objects.filter(parent_id=run_id).order_by("id"))


def step_results(run_id: str, names) -> list[StepResult]:
    """What the run's completed steps named ``names`` returned, oldest first, live or
    archived, as recorded (JSON: a dataclass's fields): for an app's panel, which must not
    read the journal's rows or restate their kinds and statuses itself."""
    wanted = set(names)
    return [
        StepResult(
            name=entry.name, position=entry.position, at=entry.updated_at, result=entry.result
        )
        for entry in run_journal(run_id)
        if entry.kind == EntryKind.STEP
        and entry.name in wanted
        and entry.status == EntryStatus.COMPLETED
    ]


def run_or_archived(run_id: str):
    """The run, live or archived (an ArchivedRun, read-only): for pages that show a run
    long after it finished, such as an approval case's."""
    run = WorkflowRun.objects.filter(pk=run_id).first()
    if run is not None:
        return run
    return archived_run_full(archived_get(run_id))


def run_journal(run_id: str) -> list:
    """The run's journal, oldest first; from the archive once the run was archived."""
    entries = list(JournalEntry.objects.filter(run_id=run_id).order_by("position"))
    if entries or WorkflowRun.objects.filter(pk=run_id).exists():
        return entries
    run = ArchivedRun.objects.select_related("batch").filter(pk=run_id).first()
    return archived_journal(run) if run is not None else []


class RunCode(NamedTuple):
    """The code a run ran on, as the run recorded it: its workflow's name and version, the
    patches its journal took (``workflow.patched``; each once, in the order first taken), and
    the function this deploy registers for that version ("" once no code registers it)."""

    workflow_name: str
    workflow_version: int
    patches: list[str]
    definition: str


def run_code(run_id: str) -> RunCode:
    """For an app that must say which code decided something (an evidence pack), live or
    archived."""
    run = run_or_archived(run_id)
    try:
        definition = registry.get(run.workflow_name, run.workflow_version).source
    except WorkflowNotFound:
        definition = ""
    patches = [entry.name for entry in run_journal(run_id) if entry.kind == EntryKind.PATCH]
    return RunCode(
        run.workflow_name, run.workflow_version, list(dict.fromkeys(patches)), definition
    )


def run_signals(run_id: str) -> list:
    signals = list(Signal.objects.filter(run_id=run_id).order_by("id"))
    if signals or WorkflowRun.objects.filter(pk=run_id).exists():
        return signals
    run = ArchivedRun.objects.select_related("batch").filter(pk=run_id).first()
    return archived_signals(run) if run is not None else []


class RunFilter(NamedTuple):
    """Which runs a list or a bulk operation means: the run list's filters, parsed.

    ``attributes`` holds ``(name, text)`` pairs as ``attr.<name>=<text>`` gives them.
    """

    status: str | None = None
    workflow: str | None = None
    version: int | None = None
    parent: str | None = None
    attributes: tuple[tuple[str, str], ...] = ()

    def is_empty(self) -> bool:
        return (
            self.status is None
            and self.workflow is None
            and self.version is None
            and self.parent is None
            and not self.attributes
        )

    def as_params(self) -> dict:
        """The filter as the run list's query parameters (for tokens, audit rows, links)."""
        params = {
            name: value
            for name, value in (
                ("status", self.status),
                ("workflow", self.workflow),
                ("version", self.version),
                ("parent", self.parent),
            )
            if value is not None
        }
        for name, text in self.attributes:
            params[f"attr.{name}"] = text
        return params


def runs_filtered(run_filter: RunFilter) -> QuerySet:
    """The runs ``run_filter`` keeps, unordered: the run list and bulk operations share it."""
    runs = WorkflowRun.objects.all()
    if run_filter.status is not None:
        runs = runs.filter(status=run_filter.status)
    if run_filter.workflow is not None:
        runs = runs.filter(workflow_name=run_filter.workflow)
    if run_filter.version is not None:
        runs = runs.filter(workflow_version=run_filter.version)
    if run_filter.parent is not None:
        runs = runs.filter(parent_id=run_filter.parent)
    return runs_with_attributes(runs, run_filter.attributes)


def runs_with_attributes(runs: QuerySet, filters) -> QuerySet:
    """``runs`` whose search attributes match every ``(name, text)`` of ``filters``.

    ``text`` is compared with the attribute's value written as a JSON scalar: ``42``
    matches 42 and "42", ``true`` matches true and "true", ``null`` matches null. On
    PostgreSQL each test is a containment (``@>``), which the GIN index answers.
    """
    for name, text in filters:
        candidates = attribute_values_written_as(text)
        if connection.vendor == "postgresql":
            tests = [Q(attributes__contains={name: value}) for value in candidates]
        else:  # the name is an identifier without "__" (see check_attribute_name)
            tests = [Q(**{f"attributes__{name}__exact": value}) for value in candidates]
        runs = runs.filter(reduce(or_, tests))
    return runs


def attribute_values_written_as(text: str) -> list:
    """Every JSON scalar whose JSON text (or, for a string, whose value) is ``text``."""
    values: list = [text]
    if text in ("true", "false"):
        values.append(text == "true")
    elif text == "null":
        values.append(None)
    else:
        try:
            number = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                return values
            if math.isfinite(number) and repr(number) == text:
                values.append(number)
        else:
            if str(number) == text:
                values.append(number)
    return values


# The admin's stage filter lists the stages of this many of the newest runs: reading every
# run's attributes costs 100-650 ms a page at a million runs (an older stage is still a URL away).
STAGES_OF_NEWEST = 5_000


def run_stages(limit: int = 100) -> list[str]:
    """The distinct ``stage`` attributes of the newest runs, for the admin's filter."""
    stages = WorkflowRun.objects.order_by("-created_at").values_list(
        KeyTransform("stage", "attributes"), flat=True
    )[:STAGES_OF_NEWEST]
    return sorted({str(stage) for stage in stages if stage is not None})[:limit]


def run_workflow_names() -> list[str]:
    """The workflows runs were started for, one index probe each, for the admin's filter."""
    return sql.distinct_values(WorkflowRun, "workflow_name")


def workflow_versions() -> list[int]:
    """The versions the registered workflows have, for the admin's filter (reading them off
    the runs would scan every run: there is no index on the version)."""
    return sorted({definition.version for definition in registry.all_definitions()})


def run_actors(run_id: str, *, actions: tuple[str, ...] | None = None) -> list[RunActor]:
    """Who did what to a run, oldest first, from its durable audit trail (start, signal,
    cancel, retry, wake; ``actions`` narrows it). Apps ask this, never the audit table
    (segregation of duties: whoever acted on a run may not approve what it asks)."""
    events = AuditEvent.objects.filter(run_id=run_id)
    if actions is not None:
        events = events.filter(action__in=actions)
    return [
        RunActor(actor, action, at)
        for actor, action, at in events.order_by("created_at", "id").values_list(
            "actor", "action", "created_at"
        )
    ]


# --- archived runs: in the archive tables, or in the gzip file an --export pass wrote ---


class ExportMissing(RunNotFound):
    """The run was exported to a file that is no longer where its batch wrote it."""


def archived_get(run_id: str) -> ArchivedRun:
    run = ArchivedRun.objects.select_related("batch").filter(pk=run_id).first()
    if run is None:
        raise RunNotFound(f"no run with id {run_id!r}")
    return run


def is_archived(run_id: str) -> bool:
    return ArchivedRun.objects.filter(pk=run_id).exists()


def _exported_document(run: ArchivedRun) -> dict:
    path = Path(run.batch.export_file)
    if not path.exists() and Path(str(path) + PARTIAL).exists():
        path = Path(str(path) + PARTIAL)  # its pass was killed before the rename; still committed
    if not path.exists():
        raise ExportMissing(
            f"run {run.id!r} was exported to {run.batch.export_file}, which is missing"
        )
    for document in export_file_documents(path):
        if document["run"]["id"] == run.id:
            return document
    raise ExportMissing(f"run {run.id!r} is not in {path}")


def _datetime(value):
    return parse_datetime(value) if isinstance(value, str) else value


def archived_journal(run: ArchivedRun) -> list[ArchivedJournalEntry]:
    if not run.batch.export_file:
        return list(run.journal.order_by("position"))
    fields = {f.name for f in ArchivedJournalEntry._meta.concrete_fields} - {"run"}
    return [
        ArchivedJournalEntry(
            run=run,
            **{
                name: _datetime(value) if name.endswith("_at") else value
                for name, value in item.items()
                if name in fields
            },
        )
        for item in _exported_document(run)["journal"]
    ]


def archived_signals(run: ArchivedRun) -> list[ArchivedSignal]:
    if not run.batch.export_file:
        return list(run.signals.order_by("id"))
    fields = {f.name for f in ArchivedSignal._meta.concrete_fields} - {"run"}
    return [
        ArchivedSignal(
            run=run,
            **{
                name: _datetime(value) if name.endswith("_at") else value
                for name, value in item.items()
                if name in fields
            },
        )
        for item in _exported_document(run)["signals"]
    ]


def archived_audit(run: ArchivedRun) -> list[ArchivedAuditEvent]:
    return list(ArchivedAuditEvent.objects.filter(run_id=run.id).order_by("chain_seq"))


def archived_run_full(run: ArchivedRun) -> ArchivedRun:
    """The run with its input, result and error, read back from its export file if need be."""
    if run.batch.export_file:
        recorded = _exported_document(run)["run"]
        run.input, run.result, run.error = recorded["input"], recorded["result"], recorded["error"]
    return run
