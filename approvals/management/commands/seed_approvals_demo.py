"""Demo data for the reviewer workbench: reviewers in their groups, a supervisor, and cases
backed by real runs that look like a working week: a mix of risks and groups, a stale
claim, a case past its SLA, one waiting on a follow-up date, and decided cases behind the
dashboard's figures. What reviewers and checks wrote is in Portuguese, as the team would write it.

Idempotent: accounts and runs have fixed names and ids; a case already seeded is left as
it is (except that, with DEBUG on, the demo passwords are set again to their known values).
Past events (a claim six hours ago, a decision last week) are played through the real
services under the engine's fake clock, so audit trails and runs tell the same story.
"""

import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand
from django.db import transaction

from approvals import services
from approvals.demo import limit_increase
from approvals.models import ApprovalRequest
from durable import clock
from durable import services as durable_services
from durable.selectors import run_exists
from durable.testing import drive

KYC, SENIOR = "kyc", "kyc-senior"
REVIEWERS = {"ana": [KYC], "bruno": [KYC], "carla": [SENIOR], "diego": [SENIOR]}
SUPERVISOR = "sofia"  # compliance-supervisor: team page, dashboard, reassign, unclaim, extend
OUTSIDER = "olga"  # signed in but not in compliance: sees 403
OPERATOR = (
    "ops"  # the Django admin, the REST API and /metrics: staff in "operators", not a superuser
)
OPERATORS_GROUP = "operators"
# What an operator does: read everything of the engine and the processes, act on runs and
# schedules, move an invoice's due date, process a message again, handle a quarantined item.
# Not: decide cases, edit users, documents or audit rows.
OPERATOR_ACTIONS = [
    "durable.operate_workflowrun",
    "durable.operate_schedule",
    "processes.change_invoice",
    "processes.change_inboundmessage",
    "processes.change_quarantineditem",
]

HOUR, DAY = timedelta(hours=1), timedelta(days=1)

# (run slug, customer, current limit, requested limit, risk, findings, deadline in days,
#  what the customer says, opened how long ago, what happened since: (after, action, user, *args))
CASES = [
    (
        "padaria-pao-quente",
        "Padaria Pão Quente",
        5_000,
        20_000,
        "low",
        [{"check": "histórico de transações", "result": "12 meses, sem contestações"}],
        3,
        "Encomendas de Natal: pagamos fornecedores à vista.",
        HOUR,
        [],
    ),
    (
        "oficina-dois-irmaos",
        "Oficina Dois Irmãos ME",
        10_000,
        30_000,
        "medium",
        [
            {
                "check": "faturamento e limite",
                "result": "o limite pedido é 1,8 vez o faturamento mensal",
            }
        ],
        2,
        "Vamos comprar um caminhão usado.",
        7 * HOUR,
        [(HOUR, "claim", "bruno")],
    ),  # stale claim
    (
        "globex-importacao",
        "Globex Importação SA",
        50_000,
        500_000,
        "high",
        [
            {"check": "beneficiário final", "result": "pessoa politicamente exposta"},
            {"check": "listas de sanções", "result": "nenhuma ocorrência"},
        ],
        3,
        "Pagamento de importação em dezembro.",
        30 * HOUR,
        [],
    ),  # past SLA
    (
        "tiny-tech",
        "Tiny Tech ME",
        2_000,
        8_000,
        "low",
        [{"check": "comprovante de renda", "result": "carta do banco prometida pelo cliente"}],
        3,
        "Folha de pagamento dos novos estagiários.",
        3 * HOUR,
        [(HOUR, "follow_up", "ana", 2 * DAY, "aguardando a carta do banco do cliente")],
    ),
    (
        "construtora-horizonte",
        "Construtora Horizonte Ltda",
        100_000,
        250_000,
        "high",
        [{"check": "contestações", "result": "2 nos últimos 90 dias"}],
        3,
        "Compra de cimento para a obra de Campinas.",
        2 * HOUR,
        [(100 * 60, "claim", "carla")],
    ),
    # Decided, for the dashboard's weeks and reviewers.
    (
        "mercearia-bom-preco",
        "Mercearia Bom Preço",
        3_000,
        6_000,
        "low",
        [],
        3,
        "Mais vendas no fim de ano.",
        20 * DAY,
        [(5 * HOUR, "approve", "ana", "histórico em ordem")],
    ),
    (
        "auto-pecas-rapido",
        "Auto Peças Rápido",
        8_000,
        40_000,
        "medium",
        [],
        3,
        "Estoque para a Black Friday.",
        13 * DAY,
        [(26 * HOUR, "reject", "bruno", "o faturamento não sustenta um limite cinco vezes maior")],
    ),
    (
        "farmacia-saude",
        "Farmácia Saúde",
        4_000,
        10_000,
        "low",
        [],
        3,
        "Novo fornecedor de genéricos.",
        9 * DAY,
        [(3 * HOUR, "approve", "ana", "cliente antigo, sem atrasos")],
    ),
    (
        "distribuidora-norte",
        "Distribuidora Norte SA",
        60_000,
        150_000,
        "high",
        [],
        3,
        "Expansão para Manaus.",
        6 * DAY,
        [
            (20 * HOUR, "approve", "carla", "demonstrações auditadas anexadas"),
            (10 * HOUR, "approve", "diego", "de acordo: demonstrações em ordem"),
        ],
    ),
    (
        "studio-foco",
        "Studio Foco",
        1_500,
        5_000,
        "low",
        [],
        3,
        "Equipamento novo.",
        2 * DAY,
        [(8 * HOUR, "more_documents", "bruno", "envie os três últimos extratos bancários")],
    ),
]


class Command(BaseCommand):
    help = "Create compliance reviewers, a supervisor and a week of approval cases (idempotent)."

    def handle(self, *args, **options):
        compliance = services.compliance_group_ensure()
        groups = {
            name: Group.objects.get_or_create(name=name)[0]
            for name in (KYC, SENIOR, services.SUPERVISOR_GROUP)
        }
        logins = []
        for username, names in REVIEWERS.items():
            logins.append(
                (
                    username,
                    self._account(username, [compliance, *(groups[n] for n in names)]),
                    f"compliance reviewer ({', '.join(names)})",
                )
            )
        logins.append(
            (
                SUPERVISOR,
                self._account(SUPERVISOR, [groups[services.SUPERVISOR_GROUP]]),
                "supervisor: /approvals/team/, /approvals/dashboard/",
            )
        )
        logins.append((OUTSIDER, self._account(OUTSIDER, []), "not a reviewer (gets 403)"))
        logins.append(
            (
                OPERATOR,
                self._account(OPERATOR, [self._operators()]),
                "operator: /admin/, /api/docs/, /metrics",
            )
        )
        get_user_model().objects.filter(username=OPERATOR).update(is_staff=True, is_superuser=False)
        for case in CASES:
            self._seed_case(*case)
        self.stdout.write("Reviewer UI: /approvals/ (sign in at /login/)")
        for username, password, role in logins:
            self.stdout.write(f"  {username:6} password: {password or '(unchanged)'}  {role}")

    def _seed_case(
        self, slug, customer, current, requested, risk, findings, deadline, why, opened_ago, events
    ):
        run_id = f"limit_increase:{slug}"
        if run_exists(run_id):
            return
        users = get_user_model().objects
        with clock.fake_clock(clock.now() - opened_ago) as past:
            with transaction.atomic():
                run = durable_services.run_start(
                    limit_increase,
                    customer,
                    current,
                    requested,
                    risk=risk,
                    findings=findings,
                    deadline_days=deadline,
                    why=why,
                    id=run_id,
                    actor="seed_approvals_demo",
                )
            drive(run.id, owner="seed_approvals_demo")  # opens the case now, not at the next sweep
            case = ApprovalRequest.objects.get(run_id=run.id)
            for after, action, username, *rest in events:
                past.advance(after)
                user = users.get(username=username)
                if action == "claim":
                    services.approval_claim(case.pk, actor=user)
                elif action == "follow_up":
                    until, reason = rest
                    services.approval_follow_up(
                        case.pk, actor=user, until=clock.now() + until, reason=reason
                    )
                else:
                    services.approval_decide(case.pk, actor=user, outcome=action, reason=rest[0])
                    drive(run.id, owner="seed_approvals_demo")

    def _operators(self) -> Group:
        group, _ = Group.objects.get_or_create(name=OPERATORS_GROUP)
        views = Permission.objects.filter(
            content_type__app_label__in=["durable", "approvals", "processes"],
            codename__startswith="view_",
        )
        actions = [
            Permission.objects.get(content_type__app_label=app, codename=codename)
            for app, codename in (name.split(".") for name in OPERATOR_ACTIONS)
        ]
        group.permissions.add(*views, *actions)
        return group

    def _account(self, username: str, groups) -> str | None:
        """Fixed demo passwords only when DEBUG; otherwise a generated one, printed once."""
        User = get_user_model()
        user, created = User.objects.get_or_create(
            username=username, defaults={"email": f"{username}@example.com"}
        )
        password = None
        if settings.DEBUG:
            password = f"{username}-demo-2024"
        elif created:
            password = secrets.token_urlsafe(12)
        if password:
            user.set_password(password)
            user.save()
        if groups:
            user.groups.add(*groups)
        return password
