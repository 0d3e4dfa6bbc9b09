"""``durable fork RUN_ID --at N [--id NEW_ID] [--yes]``: run a run again from a step, as a new
run."""

import sys

from django.core.management.base import CommandError

from durable import selectors, services
from durable.surfaces.cli._common import USAGE_ERROR, audit, short

help = (
    "Fork a run at a journal position: a new run with the same input keeps the entries before "
    "it and runs the code deployed now from there (the run itself is not changed)."
)


def add_arguments(parser):
    parser.add_argument("run_id")
    parser.add_argument(
        "--at",
        type=int,
        required=True,
        metavar="N",
        dest="at_position",
        help="the first position to run again (entries before it are kept)",
    )
    parser.add_argument("--id", dest="fork_id", help="the new run's id (default: workflow:uuid)")
    parser.add_argument("--yes", action="store_true", help="do not ask for a confirmation")


def handle(options, out) -> int:
    if options["fork_id"] is not None and not 0 < len(options["fork_id"]) <= 255:
        raise CommandError("--id must be 1 to 255 characters", returncode=USAGE_ERROR)
    preview = selectors.run_fork_preview(options["run_id"], options["at_position"])
    if preview.refusal:
        raise CommandError(preview.refusal, returncode=1)
    out.write(describe(preview))
    if not options["yes"]:
        _confirm(f"Fork run {preview.run.id} at position {preview.at_position}? [y/N] ")
    fork = services.run_fork(
        options["run_id"], at_position=options["at_position"], id=options["fork_id"], **audit()
    )
    out.write(
        f"{fork.id}  {fork.status}  (forked from {preview.run.id} at position {fork.fork_position})"
    )
    return 0


def describe(preview: selectors.ForkPreview) -> str:
    run, again = preview.run, preview.first_again
    lines = [
        f"run {run.id} ({run.workflow_name} v{run.workflow_version}, {run.status})",
        f"  keeps {len(preview.kept)} entr{'y' if len(preview.kept) == 1 else 'ies'} "
        f"(positions before {preview.at_position})",
        "  runs again from: "
        f"{f'{again.kind} {again.name!r}' if again else 'the end of its journal'}",
        f"  signals taken again: {len(preview.signals)}"
        + (f" ({short(', '.join(s.name for s in preview.signals))})" if preview.signals else ""),
    ]
    return "\n".join(lines)


def _confirm(question: str) -> None:
    if not sys.stdin or not sys.stdin.isatty():
        raise CommandError("no terminal to confirm on: add --yes to fork", returncode=USAGE_ERROR)
    if input(question).strip().lower() not in ("y", "yes"):
        raise CommandError("not forked", returncode=1)
