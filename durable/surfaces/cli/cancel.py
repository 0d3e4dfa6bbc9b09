"""``durable cancel RUN_ID [--reason TEXT] [--graceful]``: cancel a run now, or let it clean up
first."""

from durable import services
from durable.surfaces.cli._common import audit

help = (
    "Cancel a run: now (a worker running it stops at its next write; no compensation runs), or "
    "with --graceful, where the workflow is told in the call it waits in and may clean up first."
)


def add_arguments(parser):
    parser.add_argument("run_id")
    parser.add_argument("--reason", default="", help="why (kept on the run and in the audit trail)")
    parser.add_argument(
        "--graceful",
        action="store_true",
        help="raise workflow.Cancelled where the run waits, so its body can clean up; "
        "it ends cancelled when the cleanup returns (DURABLE_CANCEL_CLEANUP_SECONDS at most)",
    )


def handle(options, out) -> int:
    run = services.run_cancel(
        options["run_id"], reason=options["reason"], graceful=options["graceful"], **audit()
    )
    asked = (
        " (cancel asked: the workflow cleans up first)"
        if options["graceful"] and not run.is_finished
        else ""
    )
    out.write(f"{run.id}  {run.status}{asked}")
    return 0
