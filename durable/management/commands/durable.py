"""``python manage.py durable <subcommand>``: operate runs from a shell, over the services."""

import argparse
import importlib
import sys

from django.core.management.base import BaseCommand, CommandError

from durable.errors import DurableError
from durable.surfaces.cli import SUBCOMMANDS

# The optional packages a subcommand may need, and the extra of django-durable-flows that
# installs each: without it the subcommand is listed, and says what to install.
EXTRAS = {
    "rest_framework": "api",
    "drf_spectacular": "api",
    "prometheus_client": "api",
    "celery": "celery",
}


def _subcommand(module_path: str):
    """The subcommand's module, or the extra it needs when an optional package is missing."""
    try:
        return importlib.import_module(module_path), None
    except ModuleNotFoundError as error:
        extra = EXTRAS.get((error.name or "").partition(".")[0])
        if extra is None:
            raise
        return None, f"needs the {extra!r} extra: pip install 'django-durable-flows[{extra}]'"


class Command(BaseCommand):
    help = "Start, signal, cancel, retry and inspect durable workflow runs."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
        commands.required = True
        for name, module_path in SUBCOMMANDS.items():
            module, missing = _subcommand(module_path)
            if module is None:
                unavailable = commands.add_parser(name, help=f"({missing})", description=missing)
                unavailable.add_argument(
                    "ignored", nargs=argparse.REMAINDER, help=argparse.SUPPRESS
                )
                continue
            module.add_arguments(
                commands.add_parser(name, help=module.help, description=module.help)
            )

    def handle(self, *args, **options):
        module, missing = _subcommand(SUBCOMMANDS[options["subcommand"]])
        if module is None:
            raise CommandError(f"durable {options['subcommand']} {missing}", returncode=2)
        try:
            code = module.handle(options, self.stdout)
        except DurableError as error:
            raise CommandError(str(error), returncode=1) from None
        if code:
            sys.exit(code)
