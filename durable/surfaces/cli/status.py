"""``durable status RUN_ID [--json]``: a run, its journal and its signals."""

import json

from durable import selectors
from durable.models import RunStatus
from durable.surfaces.api import archived_detail
from durable.surfaces.cli._common import short, table, when
from durable.surfaces.serializers import RunDetailSerializer

help = "Show a run with its journal (the timeline) and its signals."


def add_arguments(parser):
    parser.add_argument("run_id")
    parser.add_argument("--json", action="store_true", help="print the API's JSON instead of text")


def handle(options, out) -> int:
    run = selectors.run_or_archived(options["run_id"])
    is_archived = hasattr(run, "archived_at")
    if options["json"]:  # the API's document, live or archived (GET /api/runs/<id>/)
        data = archived_detail(run.id) if is_archived else RunDetailSerializer(run).data
        out.write(json.dumps(data, indent=2, default=str))
        return 0
    journal = selectors.run_journal(run.id)
    signals = selectors.run_signals(run.id)
    out.write(f"run       {run.id}")
    out.write(f"workflow  {run.workflow_name} v{run.workflow_version}")
    out.write(
        f"status    {run.status}"
        + (f" (waiting for {run.waiting_for})" if run.waiting_for else "")
        + (" (archived)" if is_archived else "")
    )
    out.write(f"wake at   {when(run.wake_at) or '-'}")
    out.write(f"advances  {run.advances}")
    out.write(f"created   {when(run.created_at)}   updated {when(run.updated_at)}")
    if run.attributes:
        out.write(f"attrs     {short(run.attributes, 200)}")
    if run.parent_id:
        out.write(f"parent    {run.parent_id}")
    # By parent id, not run.children: an archived run (an ArchivedRun) has no such relation.
    children = list(
        selectors.runs_filtered(selectors.RunFilter(parent=run.id))
        .order_by("created_at", "id")
        .values_list("id", "status")[:11]
    )
    if children:
        listed = ", ".join(f"{child_id} ({status})" for child_id, status in children[:10])
        out.write(f"children  {listed}{', ...' if len(children) > 10 else ''}")
    if run.forked_from_id:
        out.write(f"forked    from {run.forked_from_id} at position {run.fork_position}")
    forks = list(selectors.run_forks(run.id))
    if forks:
        out.write(
            f"forks     {', '.join(f'{fork_id} (at {position})' for fork_id, position in forks)}"
        )
    out.write(f"input     {short(run.input, 200)}")
    if run.result is not None:
        out.write(f"result    {short(run.result, 200)}")
    if run.error:
        label = "BLOCKED" if run.status == RunStatus.BLOCKED else "error"
        out.write(f"{label:<9} {run.error.get('type', '')}: {run.error.get('message', '')}")
    out.write("")
    out.write(f"journal ({len(journal)})")
    if journal:
        out.write(
            table(
                [
                    [
                        e.position,
                        e.kind,
                        e.name,
                        e.status,
                        e.attempt,
                        f"{e.duration.total_seconds():.3f}s" if e.duration else "",
                        short(
                            f"{e.error.get('type')}: {e.error.get('message')}"
                            if e.error
                            else e.result
                        ),
                    ]
                    for e in journal
                ],
                ["#", "kind", "name", "status", "attempt", "duration", "result or error"],
            )
        )
    out.write("")
    out.write(f"signals ({len(signals)})")
    if signals:
        out.write(
            table(
                [
                    [
                        s.pk,
                        s.name,
                        "pending"
                        if s.consumed_position is None
                        else f"consumed at #{s.consumed_position}",
                        s.dedupe_key or "",
                        short(s.payload),
                    ]
                    for s in signals
                ],
                ["id", "name", "state", "dedupe key", "payload"],
            )
        )
    return 0
