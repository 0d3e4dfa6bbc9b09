"""``durable health``: exit 1 when the database, the broker, the sweep or an app's check is
unhealthy."""

import json

from durable.surfaces import health

help = (
    "Check the database, the broker, the sweep, overdue runs and the apps' own checks; "
    "exit 1 if any is unhealthy."
)


def add_arguments(parser):
    parser.add_argument(
        "--max-overdue",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="runs due longer ago than this mean no worker is advancing them (default 120)",
    )
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")


def handle(options, out) -> int:
    results = health.checks(max_overdue=options["max_overdue"])
    if options["json"]:
        out.write(json.dumps([vars(check) for check in results], indent=2))
    else:
        for check in results:
            out.write(f"{'ok  ' if check.ok else 'FAIL'} {check.name}: {check.detail}")
    return 0 if all(check.ok for check in results) else 1
