"""``durable replay <files or folders...>`` or ``--workflow NAME --status waiting [--archived]``:
check histories.

Replays recorded histories against the current code without running any step or writing
anything; exits 1 with a diff when one diverges, so CI catches a change that would block
runs in flight.
"""

from pathlib import Path

from durable.features import history
from durable.models import RunStatus

help = "Replay recorded histories (files, or live runs) against the current code, read-only."


def add_arguments(parser):
    parser.add_argument(
        "paths",
        nargs="*",
        metavar="FILE",
        help="history files written by `durable export`, or folders of *.json",
    )
    parser.add_argument("--workflow", help="replay runs of this workflow from the database")
    parser.add_argument(
        "--status",
        action="append",
        choices=list(RunStatus.values),
        help="replay runs in this status from the database (repeatable)",
    )
    parser.add_argument(
        "--archived",
        action="store_true",
        help="with --workflow/--status: replay archived runs (archive tables and export files)",
    )


def _files(paths: list[str]) -> list[Path]:
    files = []
    for raw in paths:
        path = Path(raw)
        files.extend(
            sorted([*path.glob("*.json"), *path.glob("*.jsonl.gz")]) if path.is_dir() else [path]
        )
    return files


def handle(options, out) -> int:
    paths, workflow, statuses = (
        options["paths"],
        options.get("workflow"),
        options.get("status") or [],
    )
    if not paths and not workflow and not statuses:
        out.write("nothing to replay: give history files or folders, or --workflow/--status")
        return 2
    reports, unreadable = [], 0
    for path in _files(paths):
        try:
            loaded = (
                list(history.histories_in_export(path))
                if path.name.endswith(".jsonl.gz")
                else [history.history_load(path)]
            )
        except (OSError, ValueError, EOFError) as exc:
            out.write(f"FAIL  {path}: cannot read the history: {exc}")
            unreadable += 1
            continue
        reports.extend(history.history_replay(item) for item in loaded)
    if options.get("archived") and (workflow or statuses):
        reports.extend(
            history.history_replay(item)
            for item in history.histories_archived(workflow=workflow, statuses=statuses)
        )
    elif workflow or statuses:
        reports.extend(
            history.history_replay(item)
            for item in history.histories_live(workflow=workflow, statuses=statuses)
        )
    diverged = 0
    for report in reports:
        out.write(f"{'ok  ' if report.ok else 'FAIL'}  {report.history.source}: {report.summary}")
        if report.diff:
            out.write("\n".join(f"    {line}".rstrip() for line in report.diff.splitlines()))
        diverged += not report.ok
    out.write(
        f"replayed {len(reports)} histories: {len(reports) - diverged} ok, {diverged} failed"
        + (f"; {unreadable} unreadable" if unreadable else "")
    )
    return 1 if diverged or unreadable else 0
