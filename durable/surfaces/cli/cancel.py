"""``durable cancel RUN_ID [--reason TEXT]``: cancel a run now."""
from durable import services
from durable.surfaces.cli._common import audit

help = "Cancel a run (a worker running it stops at its next write; no compensation runs)."


def add_arguments(parser):
    parser.add_argument("run_id")
    parser.add_argument("--reason", default="", help="why (kept on the run and in the audit trail)")


def handle(options, out) -> int:
    run = services.run_cancel(options["run_id"], reason=options["reason"], **audit())
    out.write(f"{run.id}  {run.status}")
    return 0
