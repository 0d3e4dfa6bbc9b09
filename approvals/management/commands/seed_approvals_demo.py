"""Demo data for the reviewer UI: reviewer accounts and open cases backed by real runs.

Idempotent: accounts and runs have fixed names and ids, so running it again changes nothing
(except that, with DEBUG on, the demo passwords are set again to their known values).
"""
import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from approvals.demo import approval_demo
from approvals.services import compliance_group_ensure
from durable import services as durable_services
from durable.models import RunStatus
from durable.testing import drive

REVIEWERS = ["ana", "bruno"]
OUTSIDER = "olga"   # signed in but not in compliance: sees 403
OPERATOR = "ops"    # the Django admin, the REST API and /metrics

CASES = [
    # (company, risk, findings, deadline in days)
    ("acme-ltda", "low", [{"check": "articles of association", "result": "ok"}], 3),
    ("padaria-sol", "medium", [{"check": "proof of address", "result": "older than 90 days"}], 1),
    ("globex-sa", "high", [{"check": "beneficial owner", "result": "politically exposed person"},
                           {"check": "sanctions list", "result": "no match"}], 3),
    ("tiny-tech-me", "low", [], 0.1),
]


class Command(BaseCommand):
    help = "Create compliance reviewer accounts and a few open approval cases (idempotent)."

    def handle(self, *args, **options):
        group = compliance_group_ensure()
        logins = []
        for username in [*REVIEWERS, OUTSIDER, OPERATOR]:
            password = self._account(username, group if username in REVIEWERS else None)
            logins.append((username, password))
        get_user_model().objects.filter(username=OPERATOR).update(is_staff=True, is_superuser=True)
        for company, risk, findings, deadline in CASES:
            with transaction.atomic():
                run = durable_services.run_start(
                    approval_demo, company, risk=risk, findings=findings, deadline_days=deadline,
                    id=f"approval_demo:{company}", actor="seed_approvals_demo")
            if run.status == RunStatus.PENDING:
                drive(run.id, owner="seed_approvals_demo")  # opens the case now, not at the next sweep
        self.stdout.write("Reviewer UI: /approvals/ (sign in at /login/)")
        for username, password in logins:
            role = ("compliance reviewer" if username in REVIEWERS else
                    "operator: /admin/, /api/docs/, /metrics" if username == OPERATOR else
                    "not a reviewer (gets 403)")
            self.stdout.write(f"  {username:6} password: {password or '(unchanged)'}  {role}")

    def _account(self, username: str, group) -> str | None:
        """Fixed demo passwords only when DEBUG; otherwise a generated one, printed once."""
        User = get_user_model()
        user, created = User.objects.get_or_create(username=username,
                                                   defaults={"email": f"{username}@example.com"})
        password = None
        if settings.DEBUG:
            password = f"{username}-demo-2024"
        elif created:
            password = secrets.token_urlsafe(12)
        if password:
            user.set_password(password)
            user.save()
        if group is not None:
            user.groups.add(group)
        return password
