"""``python manage.py seed_demo``: companies, invoices and a reconciliation batch at
different stages, driven through the real code paths. Safe to run again.

Run ``seed_approvals_demo`` first (``scripts/run`` does): the reviewer accounts decide
the demo's approved company."""

from django.core.management.base import BaseCommand

from approvals.models import OPEN_STATUSES, ApprovalRequest
from processes import demo


class Command(BaseCommand):
    help = "Create demo data (idempotent) and print where to look."

    def handle(self, *args, **options):
        out = self.stdout.write
        out("Onboarding (company, run, status, waiting for / result):")
        demo.seed_companies(out)
        out("Billing reminders:")
        demo.seed_invoices(out)
        out("Reconciliation:")
        demo.seed_reconciliation(out)
        out("\nOnboarding cases waiting for a compliance reviewer:")
        for case in ApprovalRequest.objects.filter(
            workflow_name="onboarding", status__in=OPEN_STATUSES
        ):
            out(
                f"  /approvals/{case.pk}/  {case.title}  (risk {case.risk}, "
                f"{case.required_approvals} approval{'s' if case.required_approvals > 1 else ''})"
            )
        out(
            "\nWhere to look:\n"
            "  /approvals/?workflow=onboarding   the reviewer queue "
            "(sign in at /login/ as a reviewer\n"
            "                                    printed by seed_approvals_demo, e.g. ana)\n"
            "  /admin/processes/company/        companies and their documents (sign in as the\n"
            "                                    operator printed by seed_approvals_demo, ops)\n"
            "  /admin/processes/inboundmessage/?attention=yes   messages no workflow took\n"
            "  /admin/processes/outboundmessage/   what the customers were sent\n"
            "  /admin/processes/invoice/  /admin/processes/financeticket/\n"
            "  /admin/processes/reconciliationbatch/  /admin/processes/ledgerentry/\n"
            "  /admin/durable/workflowrun/      the runs, their journals and signals\n"
            "Play the customer:  .venv/bin/python scripts/play_customer.py document "
            "'comprovante de endereço' --from 5511900000002\n"
            "(docs/processes.md explains the processes, deadlines and webhooks; "
            "docs/approvals.md the reviewer UI.)"
        )
