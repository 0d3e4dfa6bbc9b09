"""``durable start WORKFLOW [ARG ...] [--id ID] [--input JSON] [--priority N]``: start a run."""

from django.core.management.base import CommandError

from durable import services, validation
from durable.errors import PayloadError
from durable.surfaces.cli._common import USAGE_ERROR, audit, loose_json, parse_json

help = "Start a run of a registered workflow (an existing id with the same input is returned)."


def add_arguments(parser):
    parser.add_argument("workflow", help="registered workflow name")
    # Not "args": Django pops an option of that name before handle() sees it.
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="ARG",
        help="positional input; each is JSON when it parses, else text",
    )
    parser.add_argument("--id", dest="run_id", help="run id (default: <workflow>:<uuid>)")
    parser.add_argument(
        "--input",
        help='JSON input: an object of keyword arguments ({"customer_id": "c-42"}), '
        'a list of positional ones, or {"args": [...], "kwargs": {...}}',
    )
    parser.add_argument(
        "--priority",
        type=int,
        default=5,
        choices=range(10),
        metavar="0-9",
        help="higher first: the sweep's pick, a limit's line, the broker (default 5)",
    )


def split_input(options) -> tuple[list, dict]:
    args = [loose_json(arg) for arg in options["inputs"]]
    if options["input"] is None:
        return args, {}
    given = parse_json(options["input"], what="--input")
    if isinstance(given, list):
        return args + given, {}
    if isinstance(given, dict) and set(given) <= {"args", "kwargs"} and given:
        return args + list(given.get("args", [])), dict(given.get("kwargs", {}))
    if isinstance(given, dict):
        return args, given
    raise CommandError("--input must be a JSON object or list", returncode=USAGE_ERROR)


def handle(options, out) -> int:
    args, kwargs = split_input(options)
    try:
        validation.check_run_input(options["workflow"], args, kwargs)
    except PayloadError as error:
        raise CommandError(str(error), returncode=USAGE_ERROR) from None
    run = services.run_start(
        options["workflow"],
        *args,
        id=options["run_id"],
        priority=options["priority"],
        **audit(),
        **kwargs,
    )
    out.write(f"{run.id}  {run.workflow_name} v{run.workflow_version}  {run.status}")
    return 0
