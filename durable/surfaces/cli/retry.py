"""``durable retry RUN_ID``: send a failed or blocked run back to pending."""

from durable import services
from durable.surfaces.cli._common import audit

help = "Retry a failed or blocked run: it replays against the current code."


def add_arguments(parser):
    parser.add_argument("run_id")


def handle(options, out) -> int:
    run = services.run_retry(options["run_id"], **audit())
    out.write(f"{run.id}  {run.status}")
    return 0
