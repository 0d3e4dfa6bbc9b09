"""Benchmarks against the floor, on PostgreSQL + Redis with Celery workers in subprocesses.

    ./scripts/bench [--quick]

Prints a table and writes benchmarks/results/<time>.json. Each figure is measured in
the same run as the floor it is compared with. Nothing here is asserted: targets are
reported, met or not.
"""
import argparse
import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/durable_bench")
os.environ.setdefault("CELERY_BROKER_URL", "redis://127.0.0.1:6379/9")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# Production settings (DEBUG off) need a key; one per benchmark run, shared with its workers.
os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
os.environ["DURABLE_WORKFLOW_MODULES"] = "benchmarks.workflows"
os.environ["DURABLE_DISPATCHER"] = "celery"
os.environ.setdefault("LOG_LEVEL", "WARNING")
os.environ["BENCH_COUNTER_URL"] = os.environ["CELERY_BROKER_URL"]


def ensure_database():
    import dj_database_url
    import psycopg

    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    with psycopg.connect(host=db["HOST"] or "127.0.0.1", port=db["PORT"] or 5432, user=db["USER"] or "postgres",
                         password=db["PASSWORD"] or None, dbname="postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]).fetchone():
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')


ensure_database()

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from durable import executor, services, timers  # noqa: E402
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun  # noqa: E402

BROKER = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])


def pct(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


class Processes:
    def __init__(self):
        self.procs = []
        self.env = dict(os.environ)

    def worker(self, concurrency: int):
        self._start(["worker", "--concurrency", str(concurrency), "--without-gossip", "--without-mingle",
                     "--without-heartbeat", "-I", "benchmarks.tasks", "--loglevel", "WARNING"])

    def beat(self):
        self._start(["beat", "--loglevel", "WARNING", "--schedule", "/tmp/durable-bench-beat"])

    def _start(self, args):
        proc = subprocess.Popen([sys.executable, "-m", "celery", "-A", "config", *args], cwd=ROOT,
                                env=self.env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)

    def wait_ready(self):
        # A worker is ready when it answers: push a no-op chain through it.
        deadline = time.monotonic() + 60
        from benchmarks.tasks import chain_last
        BROKER.delete("bench:chains_done")
        chain_last.delay(0)
        while not BROKER.get("bench:chains_done"):
            if time.monotonic() > deadline:
                raise RuntimeError("workers did not start")
            time.sleep(0.05)

    def rss_mib(self) -> float:
        total = 0
        for proc in self.procs:
            pids = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
            for pid in pids:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                line = next((l for l in status.splitlines() if l.startswith("VmRSS:")), None)
                if line:
                    total += int(line.split()[1])
        return total / 1024

    def stop(self):
        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        self.procs.clear()


def reset_database():
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE durable_auditevent, durable_signal, durable_journalentry, durable_workflowrun CASCADE")


def wait_until(predicate, timeout=300, interval=0.01):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        time.sleep(interval)


# --- 1. throughput -----------------------------------------------------------------


def bench_floor_insert(n: int) -> float:
    """Bare psycopg: insert one row and commit, n times. Returns ms per insert+commit."""
    import psycopg

    s = connection.settings_dict
    with psycopg.connect(host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"],
                         dbname=s["NAME"]) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial primary key, v int, payload jsonb)")
        conn.commit()
        started = time.perf_counter()
        for i in range(n):
            conn.execute("INSERT INTO bench_floor (v, payload) VALUES (%s, %s)", [i, '{"r": 1}'])
            conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE bench_floor")
        conn.commit()
    return elapsed / n * 1000


def bench_chain_floor(n: int, k: int) -> float:
    from celery import chain

    from benchmarks.tasks import chain_last, chain_step

    BROKER.delete("bench:chains_done")
    started = time.perf_counter()
    for i in range(n):
        chain(*[chain_step.s(i) if j == 0 else chain_step.s() for j in range(k - 1)], chain_last.s()).delay()
    wait_until(lambda: int(BROKER.get("bench:chains_done") or 0) >= n)
    return n / (time.perf_counter() - started)


def bench_durable_throughput(n: int, k: int) -> float:
    reset_database()
    started = time.perf_counter()
    with transaction.atomic():
        for i in range(n):
            services.run_start("bench_steps", k, id=f"tp:{i}")
    wait_until(lambda: WorkflowRun.objects.filter(status=RunStatus.COMPLETED).count() >= n, interval=0.02)
    return n / (time.perf_counter() - started)


# --- 2. per-step overhead ------------------------------------------------------------


def bench_per_step(steps: int) -> dict:
    reset_database()
    os.environ["DURABLE_DISPATCHER"] = "none"
    from django.conf import settings

    settings.DURABLE_DISPATCHER = "none"
    try:
        empty = services.run_start("bench_steps", 0, id="ps:0")
        many = services.run_start("bench_steps", steps, id=f"ps:{steps}")
        with CaptureQueriesContext(connection) as q0:
            t0 = time.perf_counter()
            executor.advance(empty.id)
            t_empty = time.perf_counter() - t0
        with CaptureQueriesContext(connection) as q1:
            t0 = time.perf_counter()
            executor.advance(many.id)
            t_many = time.perf_counter() - t0
    finally:
        settings.DURABLE_DISPATCHER = "celery"
    assert WorkflowRun.objects.get(pk=many.id).status == RunStatus.COMPLETED
    return {"ms_per_step": (t_many - t_empty) / steps * 1000,
            "sql_per_step": (len(q1) - len(q0)) / steps}


# --- 3. signal to resume ---------------------------------------------------------------


def bench_signal_resume(samples: int, prefix: str) -> tuple[list[float], list[float]]:
    """From the moment signal_send has committed (and sent its message) to the moment the
    worker records the wait as satisfied. Returns (resume ms, send ms)."""
    ids = [f"{prefix}:{i}" for i in range(samples)]
    with transaction.atomic():
        for run_id in ids:
            services.run_start("bench_signal", id=run_id)
    wait_until(lambda: WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.WAITING).count() == samples)
    sent, send_ms = {}, []
    for run_id in ids:
        started = time.perf_counter()
        services.signal_send(run_id, "go", {"n": 1})
        send_ms.append((time.perf_counter() - started) * 1000)
        sent[run_id] = datetime.now(timezone.utc)
        time.sleep(0.02)
    wait_until(lambda: WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.COMPLETED).count() == samples)
    resumed = dict(JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.SIGNAL).values_list("run_id", "updated_at"))
    return [(resumed[r] - sent[r]).total_seconds() * 1000 for r in ids], send_ms


# --- 4. idle scale -----------------------------------------------------------------------


def create_idle_runs(count: int):
    """Waiting runs with a journal entry each, inserted in bulk (COPY would be faster still)."""
    from datetime import timedelta

    now = datetime.now(timezone.utc)
    deadline = now + timedelta(days=7)
    batch = 5000
    for start in range(0, count, batch):
        runs, entries = [], []
        for i in range(start, min(start + batch, count)):
            run = WorkflowRun(id=f"idle:{i}", workflow_name="bench_idle", input={"args": [], "kwargs": {}},
                              wake_at=deadline, waiting_for="signal:never", created_at=now, updated_at=now)
            run.__dict__["status"] = RunStatus.WAITING
            runs.append(run)
            entries.append(JournalEntry(run_id=run.id, position=0, kind="signal", name="never", status="waiting",
                                        wake_at=deadline, created_at=now, updated_at=now))
        WorkflowRun.objects.bulk_create(runs)
        JournalEntry.objects.bulk_create(entries)
    # Measure the steady state, not the minutes right after a bulk load: vacuum, analyze
    # and flush the load's WAL before timing anything.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE durable_workflowrun")
        cursor.execute("VACUUM ANALYZE durable_journalentry")
        cursor.execute("CHECKPOINT")


def bench_sweep_tick(ticks: int = 50) -> dict:
    durations = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        timers.sweep_due()
        durations.append((time.perf_counter() - t0) * 1000)
    return {"p50_ms": statistics.median(durations), "max_ms": max(durations)}


# --- 5. timer lateness -------------------------------------------------------------------


def bench_timer_lateness(count: int, rng) -> list[float]:
    ids = [f"timer:{i}" for i in range(count)]
    with transaction.atomic():
        for run_id in ids:
            services.run_start("bench_timer", round(rng.uniform(1.0, 4.0), 3), id=run_id)
    wait_until(lambda: WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.COMPLETED).count() == count,
               timeout=120)
    woke = dict(JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.STEP).values_list("run_id", "created_at"))
    due = dict(JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.SLEEP).values_list("run_id", "wake_at"))
    return [(woke[r] - due[r]).total_seconds() for r in ids]


def main():
    import random

    parser = argparse.ArgumentParser(description="Durable engine benchmarks")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--idle-runs", type=int, default=None)
    options = parser.parse_args()
    n_runs = 100 if options.quick else 500
    n_steps = 200 if options.quick else 1000
    n_signals = 50 if options.quick else 200
    n_idle = options.idle_runs or (10_000 if options.quick else 100_000)
    n_timers = 30 if options.quick else 100
    rng = random.Random(7)

    call_command("migrate", verbosity=0)
    reset_database()
    results = {"machine": {"cores": os.cpu_count()}, "when": datetime.now(timezone.utc).isoformat(),
               "workers": options.workers}
    procs = Processes()
    try:
        print("floor: bare insert+commit ...", flush=True)
        results["floor_insert_commit_ms"] = bench_floor_insert(2000)
        print("per-step overhead ...", flush=True)
        results["per_step"] = bench_per_step(n_steps)

        procs.worker(options.workers)
        procs.beat()
        procs.wait_ready()
        print("throughput: plain Celery chain vs durable runs ...", flush=True)
        results["chain_floor_per_s"] = bench_chain_floor(n_runs, 3)
        results["durable_runs_per_s"] = bench_durable_throughput(n_runs, 3)
        results["durable_steps_per_s"] = results["durable_runs_per_s"] * 3

        print("signal to resume (empty database) ...", flush=True)
        reset_database()
        empty, send_ms = bench_signal_resume(n_signals, "sig-empty")
        results["signal_resume_empty_ms"] = {"p50": pct(empty, 50), "p95": pct(empty, 95), "p99": pct(empty, 99)}
        results["signal_send_ms"] = {"p50": pct(send_ms, 50), "p99": pct(send_ms, 99)}
        results["sweep_tick_empty"] = bench_sweep_tick()

        print("timer lateness ...", flush=True)
        late = bench_timer_lateness(n_timers, rng)
        results["timer_lateness_s"] = {"p50": pct(late, 50), "p99": pct(late, 99)}

        print(f"idle scale: creating {n_idle} waiting runs ...", flush=True)
        reset_database()
        create_idle_runs(n_idle)
        results["idle_runs"] = n_idle
        results["sweep_tick_idle"] = bench_sweep_tick()
        idle, _ = bench_signal_resume(n_signals, "sig-idle")
        results["signal_resume_idle_ms"] = {"p50": pct(idle, 50), "p95": pct(idle, 95), "p99": pct(idle, 99)}
        results["worker_rss_mib"] = procs.rss_mib()
    finally:
        procs.stop()
        reset_database()

    print_table(results)
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"\nwrote {path.relative_to(ROOT)}")


def print_table(r: dict) -> None:
    floor = r["floor_insert_commit_ms"]
    per_step = r["per_step"]
    ratio = r["durable_runs_per_s"] / r["chain_floor_per_s"]
    idle_vs_empty = r["signal_resume_idle_ms"]["p50"] / r["signal_resume_empty_ms"]["p50"]
    rows = [
        ("bare insert+commit (floor)", f"{floor:.3f} ms", ""),
        ("per-step time", f"{per_step['ms_per_step']:.3f} ms",
         f"{per_step['ms_per_step'] - floor:+.3f} ms vs floor (target <= +1 ms)"),
        ("per-step SQL statements", f"{per_step['sql_per_step']:.2f}", "target <= 2"),
        ("plain Celery chain of 3 (floor)", f"{r['chain_floor_per_s']:.0f} chains/s", ""),
        ("durable 3-step runs", f"{r['durable_runs_per_s']:.0f} runs/s ({r['durable_steps_per_s']:.0f} steps/s)",
         f"{ratio:.0%} of the chain (target >= 75%)"),
        ("signal to resume p50/p95/p99", "{p50:.1f} / {p95:.1f} / {p99:.1f} ms".format(**r["signal_resume_empty_ms"]),
         "target p50 <= 10, p99 <= 30 ms"),
        ("signal_send (the sender's transaction)", "{p50:.1f} / {p99:.1f} ms (p50 / p99)".format(**r["signal_send_ms"]), ""),
        ("timer lateness p50/p99", "{p50:.2f} / {p99:.2f} s".format(**r["timer_lateness_s"]),
         "target p50 <= 0.6, p99 <= 1.5 s"),
        ("sweep tick, empty", f"{r['sweep_tick_empty']['p50_ms']:.2f} ms", ""),
        (f"sweep tick, {r['idle_runs']:,} waiting", f"{r['sweep_tick_idle']['p50_ms']:.2f} ms", "target <= 20 ms"),
        (f"signal to resume, {r['idle_runs']:,} waiting",
         "{p50:.1f} / {p95:.1f} / {p99:.1f} ms".format(**r["signal_resume_idle_ms"]),
         f"p50 {idle_vs_empty:.0%} of empty (target <= 120%)"),
        ("worker memory (RSS, all processes)", f"{r['worker_rss_mib']:.0f} MiB", ""),
    ]
    width = max(len(row[0]) for row in rows)
    value_width = max(len(row[1]) for row in rows)
    print()
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:<{value_width}}  {note}")


if __name__ == "__main__":
    main()
