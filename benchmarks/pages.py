"""The operators' and reviewers' pages at scale: server time and queries per page.

    .venv/bin/python benchmarks/pages.py [--runs 1000000] [--open 10000] [--decided 200000]
        [--samples 20]

Runs are made once by INSERT ... SELECT (the idle scale's ``create_idle_runs``) in their own
database (``durable_pages``), and compliance cases on them the same way (``--open`` pending,
``--decided`` approved or rejected, each decided one with its reviewer's vote); then each page
is fetched in-process through Django's test client, signed in as a superuser (the admin) or
as a senior reviewer who also supervises (the queue, the archive, the dashboard, a case): p50
and p95 of the server time over ``--samples`` fetches, and the queries one fetch makes (the
slowest named). Nothing is asserted: it prints figures.
"""

import argparse
import os
import secrets
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/durable_pages")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ["DURABLE_WORKFLOW_MODULES"] = "benchmarks.workflows"

from benchmarks.database import ensure_database  # noqa: E402

ensure_database(os.environ["DATABASE_URL"])

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from durable.models import WorkflowRun  # noqa: E402

ADMIN_PAGES = {
    "run list": "/admin/durable/workflowrun/",
    "run list, page 50": "/admin/durable/workflowrun/?p=50",
    "run list, waiting": "/admin/durable/workflowrun/?status__exact=waiting",
    "run list, search by id": "/admin/durable/workflowrun/?q=idle%3A777777",
    "run page": "/admin/durable/workflowrun/idle%3A777777/change/",
}
REVIEWER_PAGES = {
    "reviewer queue": "/approvals/",
    "archive": "/approvals/archive/",
    "dashboard": "/approvals/dashboard/",
    "team": "/approvals/team/",
}


def ensure_runs(count: int) -> None:
    from benchmarks.run import create_idle_runs

    have = WorkflowRun.objects.filter(workflow_name="bench_idle").count()
    if (
        have == count
        and WorkflowRun.objects.filter(workflow_name="bench_idle", status="completed").exists()
    ):
        return
    with connection.cursor() as cursor:  # the bench's own database: nothing else lives there
        cursor.execute("TRUNCATE durable_workflowrun CASCADE")
    started = time.perf_counter()
    create_idle_runs(count)
    # As a live table holds them: a second apart, one in three finished, each with a stage.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE durable_workflowrun "
            "SET created_at = created_at - substr(id, 6)::int * interval '1 second', "
            "attributes = jsonb_build_object('stage', "
            "CASE WHEN substr(id, 6)::int % 3 = 0 THEN 'done' ELSE 'awaiting documents' END), "
            "status = CASE WHEN substr(id, 6)::int % 3 = 0 THEN 'completed' ELSE status END, "
            "wake_at = CASE WHEN substr(id, 6)::int % 3 = 0 THEN NULL ELSE wake_at END "
            "WHERE workflow_name = 'bench_idle'"
        )
        cursor.execute("VACUUM ANALYZE durable_workflowrun")
    print(f"made {count:,} runs in {time.perf_counter() - started:.0f} s")


def ensure_cases(open_: int, decided: int) -> None:
    """Cases on the bench's runs: ``open_`` pending for the kyc-senior group, ``decided`` closed
    (two in three approved), the newest first by a second each, with one vote each."""
    from django.contrib.auth.models import Group

    from approvals.models import ApprovalDecision, ApprovalRequest

    total = open_ + decided
    if ApprovalRequest.objects.count() == total and ApprovalDecision.objects.count() == decided:
        return
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE approvals_approvalrequest CASCADE")
    senior = Group.objects.get_or_create(name="kyc-senior")[0]
    reviewer = get_user_model().objects.get(username="bench-reviewer")
    now = timezone.now()
    template = ApprovalRequest(
        run_id="idle:1",
        workflow_name="bench_idle",
        signal_name="compliance_decision",
        idempotency_key="bench-case:0",
        title="Padaria Boa Massa — CNPJ 11.222.333/0001-81",
        summary={
            "company": "Padaria Boa Massa",
            "cnpj": "11.222.333/0001-81",
            "documents_received": "contrato.pdf\nluz.pdf\nselfie.jpg",
            "findings": [],
            "risk": "low",
        },
        subject_type="company",
        subject_id="c-0",
        due_at=now,
        created_at=now,
        updated_at=now,
    )
    ApprovalRequest.objects.bulk_create([template])
    template.candidate_groups.add(senior)
    columns = [f.column for f in ApprovalRequest._meta.concrete_fields if f.column not in ("id",)]
    varied = {
        "run_id": "'idle:' || (mod(g, 999998) + 1)",
        "idempotency_key": "'bench-case:' || g",
        "subject_id": "'c-' || g",
        "created_at": "t.created_at - g * interval '1 second'",
        "updated_at": "t.created_at - g * interval '1 second'",
        "due_at": "t.created_at - g * interval '1 second' + interval '3 days'",
        "status": (
            f"CASE WHEN g < {open_} THEN 'pending' WHEN mod(g, 3) = 0 THEN 'rejected' "
            "ELSE 'approved' END"
        ),
        "outcome": (
            f"CASE WHEN g < {open_} THEN '' WHEN mod(g, 3) = 0 THEN 'reject' ELSE 'approve' END"
        ),
        "closed_at": f"CASE WHEN g < {open_} THEN NULL ELSE t.created_at - g * interval '1 second' "
        "+ interval '1 day' END",
        "closed_by": f"CASE WHEN g < {open_} THEN '' ELSE 'bench-reviewer' END",
    }
    select = ", ".join(varied.get(column, f"t.{column}") for column in columns)
    through = ApprovalRequest.candidate_groups.through._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO approvals_approvalrequest ({', '.join(columns)}) SELECT {select} "
            f"FROM approvals_approvalrequest t, generate_series(1, {total - 1}) AS g "
            "WHERE t.id = %s",
            [template.pk],
        )
        cursor.execute(
            f"INSERT INTO {through} (approvalrequest_id, group_id) SELECT id, %s FROM "
            f"approvals_approvalrequest WHERE id <> %s",
            [senior.pk, template.pk],
        )
        cursor.execute(
            "INSERT INTO approvals_approvaldecision (request_id, reviewer_id, outcome, reason, "
            "customer_message, created_at) "
            "SELECT id, %s, outcome, 'documentos conferidos', '', closed_at "
            "FROM approvals_approvalrequest WHERE closed_at IS NOT NULL",
            [reviewer.pk],
        )
        cursor.execute("VACUUM ANALYZE approvals_approvalrequest")
        cursor.execute(f"VACUUM ANALYZE {through}")
        cursor.execute("VACUUM ANALYZE approvals_approvaldecision")
    print(
        f"made {open_:,} open and {decided:,} decided "
        f"cases in {time.perf_counter() - started:.0f} s"
    )


def measure(client: Client, url: str, samples: int) -> dict:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        response = client.get(url)
        times.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    slowest = max(queries.captured_queries, key=lambda query: float(query["time"]))
    times.sort()
    return {
        "p50": statistics.median(times),
        "p95": times[max(0, round(0.95 * len(times)) - 1)],
        "queries": len(queries.captured_queries),
        "slowest_ms": float(slowest["time"]) * 1000,
        "slowest": slowest["sql"][:140],
    }


def bench_reviewer():
    """A senior reviewer who supervises: sees every case, the archive and the dashboard."""
    from django.contrib.auth.models import Group, Permission

    from approvals.services import COMPLIANCE_GROUP, SUPERVISOR_GROUP

    user, _ = get_user_model().objects.get_or_create(
        username="bench-reviewer", defaults={"is_staff": False}
    )
    for name in (COMPLIANCE_GROUP, SUPERVISOR_GROUP, "kyc-senior"):
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="approvals"))
    return user


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--open", type=int, default=10_000)
    parser.add_argument("--decided", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=20)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    ensure_runs(options.runs)
    admin, _ = get_user_model().objects.get_or_create(
        username="bench-admin", defaults={"is_staff": True, "is_superuser": True}
    )
    reviewer = bench_reviewer()
    ensure_cases(options.open, options.decided)
    clients = {"admin": Client(), "reviewer": Client()}
    clients["admin"].force_login(admin)
    clients["reviewer"].force_login(reviewer)
    from approvals.models import ApprovalRequest

    pages = [("admin", name, url) for name, url in ADMIN_PAGES.items()]
    pages += [("reviewer", name, url) for name, url in REVIEWER_PAGES.items()]
    pages.append(
        (
            "reviewer",
            "case page",
            f"/approvals/{ApprovalRequest.objects.order_by('-id').first().pk}/",
        )
    )
    print(
        f"{'page':<26} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'slowest ms':>11}  slowest query"
    )
    for who, name, url in pages:
        figures = measure(clients[who], url, options.samples)
        print(
            f"{name:<26} {figures['p50']:>8.1f} {figures['p95']:>8.1f} {figures['queries']:>8} "
            f"{figures['slowest_ms']:>11.1f}  {figures['slowest']}"
        )


if __name__ == "__main__":
    main()
