"""``python manage.py durable <subcommand>``: operate runs from a shell, over the services."""
import importlib
import sys

from django.core.management.base import BaseCommand, CommandError

from durable.surfaces.cli import SUBCOMMANDS
from durable.errors import DurableError


class Command(BaseCommand):
    help = "Start, signal, cancel, retry and inspect durable workflow runs."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
        commands.required = True
        for name, module_path in SUBCOMMANDS.items():
            module = importlib.import_module(module_path)
            module.add_arguments(commands.add_parser(name, help=module.help, description=module.help))

    def handle(self, *args, **options):
        module = importlib.import_module(SUBCOMMANDS[options["subcommand"]])
        try:
            code = module.handle(options, self.stdout)
        except DurableError as error:
            raise CommandError(str(error), returncode=1) from None
        if code:
            sys.exit(code)
