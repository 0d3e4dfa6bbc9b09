"""Subcommands of ``manage.py durable``: one module each, listed in SUBCOMMANDS.

A module defines ``help`` (one line), ``add_arguments(parser)`` and
``handle(options, out) -> int`` (the exit code). Errors the engine names
(``DurableError``) are printed without a traceback and exit 1.
"""
SUBCOMMANDS = {
    "export": "durable.cli.export",
    "replay": "durable.cli.replay",
}
