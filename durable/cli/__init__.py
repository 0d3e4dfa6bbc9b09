"""Subcommands of ``manage.py durable``: one module each, listed in SUBCOMMANDS.

A module defines ``help`` (one line), ``add_arguments(parser)`` and
``handle(options, out) -> int`` (the exit code). Errors the engine names
(``DurableError``) are printed without a traceback and exit 1.
"""
SUBCOMMANDS = {
    "export": "durable.cli.export",
    "replay": "durable.cli.replay",
    "start": "durable.cli.start",
    "signal": "durable.cli.signal",
    "cancel": "durable.cli.cancel",
    "retry": "durable.cli.retry",
    "wake": "durable.cli.wake",
    "status": "durable.cli.status",
    "list": "durable.cli.list_runs",
    "audit": "durable.cli.audit",
    "health": "durable.cli.health",
    "archive": "durable.cli.archive",
    "sizes": "durable.cli.sizes",
    "schedule": "durable.cli.schedule",
}
