"""``python manage.py seed_demo``: companies, invoices and a reconciliation batch at
different stages, driven through the real code paths. Safe to run again."""
from django.core.management.base import BaseCommand

from processes import demo
from processes.onboarding.models import Company


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
        in_review = Company.objects.get(wa_id="5511900000003").run_id
        out(
            "\nWhere to look (create a login first: python manage.py createsuperuser):\n"
            "  /admin/processes/company/        companies and their documents\n"
            "  /admin/processes/inboundmessage/?attention=yes   messages no workflow took\n"
            "  /admin/processes/outboundmessage/   what the customers were sent\n"
            "  /admin/processes/invoice/  /admin/processes/financeticket/\n"
            "  /admin/processes/reconciliationbatch/  /admin/processes/ledgerentry/\n"
            "  /admin/durable/workflowrun/      the runs, their journals and signals\n"
            "Play the customer:  .venv/bin/python scripts/play_customer.py --from 5511900000002 "
            "--document 'comprovante de endereço'\n"
            "Decide compliance:  .venv/bin/python manage.py shell -c \"from durable import services; "
            f"services.signal_send('{in_review}', 'compliance_decision', "
            "{'approved': True, 'by': 'me', 'reason': ''})\"\n"
            "(docs/processes.md explains the processes, deadlines and webhooks.)")
