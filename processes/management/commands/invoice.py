"""``manage.py invoice void NUMBER --reason TEXT [--yes]`` and ``manage.py invoice due-date
NUMBER --at ISO [--reason TEXT] [--yes]``: billing's operations for a terminal, through the
invoice's run.

Exit status: 0 done (or stored for the run), 1 refused or not confirmed, 2 bad usage (no
such invoice, a bad date, no terminal to confirm on without --yes)."""

import sys
from datetime import datetime

from django.core.management.base import BaseCommand, CommandError

from durable.surfaces.audit import command_audit as audit
from processes.billing.models import Invoice
from processes.billing.rules import REASON_MAX, due_at_from_text
from processes.billing.services import InvoiceSettled, invoice_due_date_change, invoice_void

USAGE_ERROR = 2  # as durable's commands: bad usage, nothing changed


class Command(BaseCommand):
    help = "Void an invoice or give it a new due date, through its reminders' run."

    def add_arguments(self, parser):
        actions = parser.add_subparsers(dest="action", required=True)
        void = actions.add_parser("void", help="void an open invoice: no further reminder")
        void.add_argument("number")
        void.add_argument(
            "--reason", required=True, help="why (kept in the run's journal and audit)"
        )
        void.add_argument("--yes", action="store_true", help="do not ask for a confirmation")
        due = actions.add_parser("due-date", help="a new due date: reminders start again from it")
        due.add_argument("number")
        due.add_argument(
            "--at",
            required=True,
            metavar="ISO",
            dest="due_at",
            help="ISO 8601 with its offset, e.g. 2027-02-01T12:00:00-03:00",
        )
        due.add_argument("--reason", default="", help="why (kept in the run's journal and audit)")
        due.add_argument("--yes", action="store_true", help="do not ask for a confirmation")

    def handle(self, *args, **options):
        invoice = Invoice.objects.filter(number=options["number"]).first()
        if invoice is None:
            raise CommandError(f"no invoice {options['number']!r}", returncode=USAGE_ERROR)
        if options["action"] == "void":
            if not options["reason"].strip() or len(options["reason"]) > REASON_MAX:
                raise CommandError(
                    f"--reason is 1 to {REASON_MAX} characters", returncode=USAGE_ERROR
                )
            question = (
                f"Void invoice {invoice.number} ({invoice.customer_name}, {invoice.status})? [y/N] "
            )

            def apply():
                return invoice_void(invoice, reason=options["reason"], **audit())
        else:
            due_at = _due_at(options["due_at"])
            if len(options["reason"]) > REASON_MAX:
                raise CommandError(
                    f"--reason is at most {REASON_MAX} characters", returncode=USAGE_ERROR
                )
            question = (
                f"Move invoice {invoice.number}'s due date from "
                f"{invoice.due_at:%Y-%m-%d %H:%M %Z} to {due_at}? [y/N] "
            )

            def apply():
                return invoice_due_date_change(
                    invoice, due_at=due_at, reason=options["reason"], **audit()
                )

        if not options["yes"]:
            _confirm(question)
        try:
            applied = apply()
        except InvoiceSettled as refused:
            raise CommandError(f"refused: {refused}", returncode=1) from None
        invoice.refresh_from_db()
        self.stdout.write(
            f"{invoice.number}: {'done' if applied else 'stored; its run will apply it'} "
            f"(status {invoice.status}, due {invoice.due_at:%Y-%m-%d %H:%M %Z})"
        )


def _due_at(text: str) -> datetime:
    try:
        return due_at_from_text(text)
    except ValueError as problem:
        raise CommandError(f"--at {text!r}: {problem}", returncode=USAGE_ERROR) from None


def _confirm(question: str) -> None:
    if not sys.stdin or not sys.stdin.isatty():
        raise CommandError("no terminal to confirm on: add --yes", returncode=USAGE_ERROR)
    if input(question).strip().lower() not in ("y", "yes"):
        raise CommandError("nothing changed", returncode=1)
