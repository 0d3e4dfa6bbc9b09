"""``durable list [--status S] [--workflow W] [--limit N]``: runs, newest first."""

from django.core.management.base import CommandError

from durable.models import RunStatus, WorkflowRun
from durable.surfaces.cli._common import USAGE_ERROR, table, when

help = "List runs, newest first, filtered by status and workflow."


def add_arguments(parser):
    parser.add_argument("--status", choices=RunStatus.values)
    parser.add_argument("--workflow", help="workflow name")
    parser.add_argument("--limit", type=int, default=50, help="at most this many (default 50)")


def handle(options, out) -> int:
    if options["limit"] < 1:
        raise CommandError("--limit must be at least 1", returncode=USAGE_ERROR)
    runs = WorkflowRun.objects.order_by("-created_at", "id")
    if options["status"]:
        runs = runs.filter(status=options["status"])
    if options["workflow"]:
        runs = runs.filter(workflow_name=options["workflow"])
    total = runs.count()
    shown = list(runs[: options["limit"]])
    if not shown:
        out.write("no runs")
        return 0
    out.write(
        table(
            [
                [
                    r.id,
                    f"{r.workflow_name} v{r.workflow_version}",
                    r.status,
                    r.waiting_for,
                    when(r.wake_at),
                    r.advances,
                    when(r.updated_at),
                ]
                for r in shown
            ],
            ["id", "workflow", "status", "waiting for", "wake at", "advances", "updated"],
        )
    )
    if total > len(shown):
        out.write(f"({len(shown)} of {total}; use --limit to see more)")
    return 0
