"""``durable signal RUN_ID NAME [--payload JSON] [--dedupe-key KEY]``: send a signal."""

from durable import services
from durable.surfaces.cli._common import audit, parse_json

help = "Send a signal to a run (a repeated --dedupe-key is the same signal)."


def add_arguments(parser):
    parser.add_argument("run_id")
    parser.add_argument("name", help="signal name, e.g. documents_received")
    parser.add_argument("--payload", help="JSON payload (default: null)")
    parser.add_argument("--dedupe-key", help="dedupe key: the same key twice is one signal")


def handle(options, out) -> int:
    payload = (
        parse_json(options["payload"], what="--payload") if options["payload"] is not None else None
    )
    signal = services.signal_send(
        options["run_id"],
        options["name"],
        payload,
        dedupe_key=options["dedupe_key"] or None,
        **audit(),
    )
    out.write(f"signal #{signal.pk} {signal.name!r} recorded for {signal.run_id}")
    return 0
