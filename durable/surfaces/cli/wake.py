"""``durable wake RUN_ID``: end a sleep or a retry back-off now."""

from durable import services
from durable.surfaces.cli._common import audit

help = (
    "Wake a pending or waiting run now (ends sleeps and back-offs; never times out a signal wait)."
)


def add_arguments(parser):
    parser.add_argument("run_id")


def handle(options, out) -> int:
    run = services.run_wake(options["run_id"], **audit())
    out.write(f"{run.id}  {run.status}  wakes at {run.wake_at.isoformat(timespec='seconds')}")
    return 0
