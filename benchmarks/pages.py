"""The operators' pages at scale: server time and queries per page with a million runs.

    .venv/bin/python benchmarks/pages.py [--runs 1000000] [--samples 20]

Runs are made once by INSERT ... SELECT (the idle scale's ``create_idle_runs``) in their own
database (``durable_pages``), then each page is fetched in-process through Django's test
client as a signed-in superuser: p50 and p95 of the server time over ``--samples`` fetches,
and the queries one fetch makes (the slowest named). Nothing is asserted: it prints figures.
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

from durable.models import WorkflowRun  # noqa: E402

PAGES = {
    "run list": "/admin/durable/workflowrun/",
    "run list, page 50": "/admin/durable/workflowrun/?p=50",
    "run list, waiting": "/admin/durable/workflowrun/?status__exact=waiting",
    "run list, search by id": "/admin/durable/workflowrun/?q=idle%3A777777",
    "run page": "/admin/durable/workflowrun/idle%3A777777/change/",
}


def ensure_runs(count: int) -> None:
    from benchmarks.run import create_idle_runs

    have = WorkflowRun.objects.filter(workflow_name="bench_idle").count()
    if have == count and WorkflowRun.objects.filter(workflow_name="bench_idle", status="completed").exists():
        return
    with connection.cursor() as cursor:   # the bench's own database: nothing else lives there
        cursor.execute("TRUNCATE durable_workflowrun CASCADE")
    started = time.perf_counter()
    create_idle_runs(count)
    # As a live table holds them: a second apart, one in three finished, each with a stage.
    with connection.cursor() as cursor:
        cursor.execute("UPDATE durable_workflowrun SET created_at = created_at - substr(id, 6)::int * interval '1 second', "
                       "attributes = jsonb_build_object('stage', CASE WHEN substr(id, 6)::int % 3 = 0 THEN 'done' "
                       "ELSE 'awaiting documents' END), "
                       "status = CASE WHEN substr(id, 6)::int % 3 = 0 THEN 'completed' ELSE status END, "
                       "wake_at = CASE WHEN substr(id, 6)::int % 3 = 0 THEN NULL ELSE wake_at END "
                       "WHERE workflow_name = 'bench_idle'")
        cursor.execute("VACUUM ANALYZE durable_workflowrun")
    print(f"made {count:,} runs in {time.perf_counter() - started:.0f} s")


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
    return {"p50": statistics.median(times), "p95": times[max(0, round(0.95 * len(times)) - 1)],
            "queries": len(queries.captured_queries), "slowest_ms": float(slowest["time"]) * 1000,
            "slowest": slowest["sql"][:140]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--samples", type=int, default=20)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    ensure_runs(options.runs)
    admin, _ = get_user_model().objects.get_or_create(username="bench-admin", defaults={
        "is_staff": True, "is_superuser": True})
    client = Client()
    client.force_login(admin)
    print(f"{'page':<26} {'p50 ms':>8} {'p95 ms':>8} {'queries':>8} {'slowest ms':>11}  slowest query")
    for name, url in PAGES.items():
        figures = measure(client, url, options.samples)
        print(f"{name:<26} {figures['p50']:>8.1f} {figures['p95']:>8.1f} {figures['queries']:>8} "
              f"{figures['slowest_ms']:>11.1f}  {figures['slowest']}")


if __name__ == "__main__":
    main()
