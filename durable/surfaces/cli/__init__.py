"""Subcommands of ``manage.py durable``: one module each, listed in SUBCOMMANDS.

A module defines ``help`` (one line), ``add_arguments(parser)`` and
``handle(options, out) -> int`` (the exit code). Errors the engine names
(``DurableError``) are printed without a traceback and exit 1.
"""

SUBCOMMANDS = {
    "export": "durable.surfaces.cli.export",
    "replay": "durable.surfaces.cli.replay",
    "start": "durable.surfaces.cli.start",
    "signal": "durable.surfaces.cli.signal",
    "cancel": "durable.surfaces.cli.cancel",
    "retry": "durable.surfaces.cli.retry",
    "wake": "durable.surfaces.cli.wake",
    "fork": "durable.surfaces.cli.fork",
    "status": "durable.surfaces.cli.status",
    "list": "durable.surfaces.cli.list_runs",
    "audit": "durable.surfaces.cli.audit",
    "health": "durable.surfaces.cli.health",
    "archive": "durable.surfaces.cli.archive",
    "sizes": "durable.surfaces.cli.sizes",
    "schedule": "durable.surfaces.cli.schedule",
    "token": "durable.surfaces.cli.token",
    "roles": "durable.surfaces.cli.roles",
}
