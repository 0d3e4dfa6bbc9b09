"""Benchmarks against the floor and the peers, on PostgreSQL + Redis with Celery workers in
subprocesses.

    ./scripts/bench [--quick] [--peers] [--profile]

Prints a table, writes benchmarks/results/<time>.json and <time>.svg. Each figure is the
median of several trials, taken in turn with the floor or peer it is compared with
(A B A B ...), so that both see the same machine. Nothing here is asserted: targets are
reported as met, missed or unstable.
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
from datetime import UTC, datetime
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

from benchmarks.database import ensure_database  # noqa: E402

ensure_database(os.environ["DATABASE_URL"])

import django  # noqa: E402

django.setup()

import redis  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402

from benchmarks import report  # noqa: E402
from benchmarks.peer import Peer, peer_url, signal_each  # noqa: E402
from benchmarks.report import pct, ratio, summary  # noqa: E402
from durable import services  # noqa: E402
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun  # noqa: E402
from durable.runtime import executor, sweep  # noqa: E402

BROKER = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])


class Processes:
    def __init__(self):
        self.procs = []
        self.env = dict(os.environ)

    def worker(self, concurrency: int):
        self.worker_proc = None
        # As production runs them (docs/operations.md): the default queue and the takeover
        # lane on the measured processes, the sweep on its own solo worker.
        self._start(
            [
                "worker",
                "-Q",
                "celery,durable-takeover",
                "--concurrency",
                str(concurrency),
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "-I",
                "benchmarks.tasks",
                "--loglevel",
                "WARNING",
            ]
        )
        measured = self.worker_proc
        self._start(
            [
                "worker",
                "-Q",
                "durable-sweep",
                "--pool",
                "solo",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "WARNING",
                "--hostname",
                "sweep@%h",
            ]
        )
        self.worker_proc = measured

    def beat(self):
        self._start(["beat", "--loglevel", "WARNING", "--schedule", "/tmp/durable-bench-beat"])

    def _start(self, args):
        proc = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", *args],
            cwd=ROOT,
            env=self.env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.procs.append(proc)
        if args[0] == "worker":
            self.worker_proc = proc

    def worker_children(self) -> list[int]:
        """The pids of the worker's pool processes (the ones that run tasks)."""
        out = subprocess.run(
            ["pgrep", "-P", str(self.worker_proc.pid)], capture_output=True, text=True
        ).stdout
        return [int(pid) for pid in out.split()]

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
            pids = subprocess.run(
                ["pgrep", "-g", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
            for pid in pids:
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                line = next((row for row in status.splitlines() if row.startswith("VmRSS:")), None)
                if line:
                    total += int(line.split()[1])
        return total / 1024

    def pause(self):
        """SIGSTOP the worker and the beat (every process of their groups) while the peer is
        measured."""
        self._signal(signal.SIGSTOP)

    def resume(self):
        self._signal(signal.SIGCONT)

    def _signal(self, signum):
        signal_each([proc.pid for proc in self.procs], signum, send=os.killpg)

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
        cursor.execute(
            "TRUNCATE durable_auditevent, durable_signal, durable_journalentry, "
            "durable_workflowrun CASCADE"
        )


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
    with psycopg.connect(
        host=s["HOST"] or "127.0.0.1", port=s["PORT"] or 5432, user=s["USER"], dbname=s["NAME"]
    ) as conn:
        conn.execute(
            "CREATE TABLE IF NOT EXISTS bench_floor "
            "(id bigserial primary key, v int, payload jsonb)"
        )
        conn.commit()
        started = time.perf_counter()
        for i in range(n):
            conn.execute("INSERT INTO bench_floor (v, payload) VALUES (%s, %s)", [i, '{"r": 1}'])
            conn.commit()
        elapsed = time.perf_counter() - started
        conn.execute("DROP TABLE bench_floor")
        conn.commit()
    return elapsed / n * 1000


# A throughput trial measures how fast the worker layout drains work already queued: the
# producer starts every run (publishes every chain, enqueues every DBOS workflow) while the
# workers are stopped, and the clock starts when they are continued. On 2 cores a producer
# publishing while the workers consume made each trial a different race for the CPU (the
# chain alone spread 18-49% between trials). The producer's own cost is kept apart (FILL).
FILL: dict[str, list[float]] = {}


def filled(name: str, n: int, pause, resume, fill) -> float:
    """Stop the workers, fill their queue, continue them: the seconds since, to the end."""
    pause()
    started = time.perf_counter()
    done = fill()
    FILL.setdefault(name, []).append((time.perf_counter() - started) / n * 1000)
    started = time.perf_counter()
    resume()
    wait_until(done, interval=0.02)
    return time.perf_counter() - started


def bench_chain_floor(n: int, k: int, procs: "Processes") -> float:
    from celery import chain

    from benchmarks.tasks import chain_last, chain_step

    def fill():
        BROKER.delete("bench:chains_done")
        for i in range(n):
            chain(
                *[chain_step.s(i) if j == 0 else chain_step.s() for j in range(k - 1)],
                chain_last.s(),
            ).delay()
        return lambda: int(BROKER.get("bench:chains_done") or 0) >= n

    return n / filled("chain", n, procs.pause, procs.resume, fill)


def bench_durable_throughput(n: int, k: int, procs: "Processes") -> float:
    def fill():
        with transaction.atomic():
            for i in range(n):
                services.run_start("bench_steps", k, id=f"tp:{i}", actor="bench")
        return lambda: WorkflowRun.objects.filter(status=RunStatus.COMPLETED).count() >= n

    reset_database()
    return n / filled("ours", n, procs.pause, procs.resume, fill)


def bench_dbos_queue(n: int, k: int, peer: Peer) -> float:
    peer.call(
        "reset"
    )  # TRUNCATE while the workers run: a stopped one could hold a lock it waits for

    def fill():
        prefix = peer.call("enqueue", runs=n, steps=k)["prefix"]
        return lambda: peer.call("done", prefix=prefix)["done"] >= n

    return n / filled("dbos_queue", n, peer.pause, peer.resume, fill)


# --- 2. per-step overhead ------------------------------------------------------------


def bench_per_step(steps: int) -> dict:
    reset_database()
    os.environ["DURABLE_DISPATCHER"] = "none"
    from django.conf import settings

    settings.DURABLE_DISPATCHER = "none"
    connection.queries_log.clear()  # it keeps 9,000: a full log would count no statement
    try:
        empty = services.run_start("bench_steps", 0, id="ps:0", actor="bench")
        many = services.run_start("bench_steps", steps, id=f"ps:{steps}", actor="bench")
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
    return {
        "ms_per_step": (t_many - t_empty) / steps * 1000,
        "sql_per_step": (len(q1) - len(q0)) / steps,
    }


# --- 3. signal to resume ---------------------------------------------------------------


def bench_signal_resume(samples: int, prefix: str) -> tuple[list[float], list[float]]:
    """From the moment signal_send has committed (and sent its message) to the moment the
    worker records the wait as satisfied. Returns (resume ms, send ms)."""
    ids = [f"{prefix}:{i}" for i in range(samples)]
    with transaction.atomic():
        for run_id in ids:
            services.run_start("bench_signal", id=run_id, actor="bench")
    wait_until(
        lambda: WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.WAITING).count() == samples
    )
    sent, send_ms = {}, []
    for run_id in ids:
        started = time.perf_counter()
        services.signal_send(run_id, "go", {"n": 1}, actor="bench")
        send_ms.append((time.perf_counter() - started) * 1000)
        sent[run_id] = datetime.now(UTC)
        time.sleep(0.02)
    wait_until(
        lambda: (
            WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.COMPLETED).count() == samples
        )
    )
    resumed = dict(
        JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.SIGNAL).values_list(
            "run_id", "updated_at"
        )
    )
    return [(resumed[r] - sent[r]).total_seconds() * 1000 for r in ids], send_ms


# --- 4. idle scale -----------------------------------------------------------------------


def create_idle_runs(count: int):
    """Waiting runs with a journal entry each: one made through the ORM, copied by
    INSERT ... SELECT over generate_series (a million in well under a minute)."""
    from datetime import timedelta

    now = datetime.now(UTC)
    deadline = now + timedelta(days=7)
    template = WorkflowRun(
        id="idle:0",
        workflow_name="bench_idle",
        input={"args": [], "kwargs": {}},
        wake_at=deadline,
        waiting_for="signal:never",
        created_at=now,
        updated_at=now,
    )
    template.__dict__["status"] = RunStatus.WAITING
    WorkflowRun.objects.bulk_create([template])
    JournalEntry.objects.create(
        run_id=template.id,
        position=0,
        kind="signal",
        name="never",
        status="waiting",
        wake_at=deadline,
        created_at=now,
        updated_at=now,
    )
    run_columns = [f.column for f in WorkflowRun._meta.concrete_fields if f.column != "id"]
    entry_columns = [
        f.column for f in JournalEntry._meta.concrete_fields if f.column not in ("id", "run_id")
    ]
    batch = 200_000
    with connection.cursor() as cursor:
        for start in range(1, count, batch):
            series = f"generate_series({start}, {min(start + batch, count) - 1}) AS g"
            cursor.execute(
                f"INSERT INTO durable_workflowrun (id, {', '.join(run_columns)}) "
                f"SELECT 'idle:' || g, {', '.join('t.' + c for c in run_columns)} "
                f"FROM durable_workflowrun t, {series} WHERE t.id = 'idle:0'"
            )
            cursor.execute(
                f"INSERT INTO durable_journalentry (run_id, {', '.join(entry_columns)}) "
                f"SELECT 'idle:' || g, {', '.join('t.' + c for c in entry_columns)} "
                f"FROM durable_journalentry t, {series} WHERE t.run_id = 'idle:0'"
            )
        # Measure the steady state, not the minutes right after a bulk load: vacuum, analyze
        # and flush the load's WAL before timing anything.
        cursor.execute("VACUUM ANALYZE durable_workflowrun")
        cursor.execute("VACUUM ANALYZE durable_journalentry")
        cursor.execute("CHECKPOINT")
        cursor.execute(
            "SELECT count(*) FROM durable_workflowrun WHERE status = %s", [RunStatus.WAITING]
        )
        assert cursor.fetchone()[0] == count


class LoadedTables:
    """A second set of the run tables holding the waiting runs, swapped with the live set by
    renaming both in one transaction: the idle scale's empty and loaded parts can then
    alternate within seconds, as every other measure's sides do, while the million is
    created once. Every connection (the workers' too) sees the swap at its next statement:
    PostgreSQL re-analyses a prepared statement whose table was renamed.

    The run tables are the run table and every table with a foreign key to it, read from
    the catalogue so that a new one is swapped too. LIKE copies columns, defaults,
    identities and indexes; the foreign keys to the run table are copied by hand, as the
    loaded set's own."""

    def __init__(self):
        self.swapped_in = False
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.conrelid::regclass::text, a.attname, pg_get_constraintdef(c.oid) "
                "FROM pg_constraint c JOIN pg_attribute a ON a.attrelid = c.conrelid "
                "AND a.attnum = c.conkey[1] "
                "WHERE c.contype = 'f' AND c.confrelid = 'durable_workflowrun'::regclass"
            )
            self.referring = cursor.fetchall()  # (table, its run column, the foreign key)
        self.tables = ["durable_workflowrun", *(table for table, _, _ in self.referring)]

    def create(self, count: int):
        with connection.cursor() as cursor:
            for table in self.tables:
                cursor.execute(f"DROP TABLE IF EXISTS {table}_loaded CASCADE")
                cursor.execute(f"CREATE TABLE {table}_loaded (LIKE {table} INCLUDING ALL)")
            for table, _, definition in self.referring:
                loaded = definition.replace(
                    "REFERENCES durable_workflowrun(", "REFERENCES durable_workflowrun_loaded("
                )
                assert loaded != definition, definition
                cursor.execute(f"ALTER TABLE {table}_loaded ADD {loaded}")
        self.swap()
        create_idle_runs(count)
        self.swap()

    def swap(self):
        with transaction.atomic(), connection.cursor() as cursor:
            for table in self.tables:
                cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_swap")
                cursor.execute(f"ALTER TABLE {table}_loaded RENAME TO {table}")
                cursor.execute(f"ALTER TABLE {table}_swap RENAME TO {table}_loaded")
        self.swapped_in = not self.swapped_in

    def forget(self, ids: list[str]):
        """Delete a part's runs from the loaded set, which keeps only its waiting runs."""
        with transaction.atomic(), connection.cursor() as cursor:
            for table, column, _ in self.referring:
                cursor.execute(f"DELETE FROM {table} WHERE {column} = ANY(%s)", [ids])
            cursor.execute("DELETE FROM durable_workflowrun WHERE id = ANY(%s)", [ids])

    def drop(self):
        if self.swapped_in:
            self.swap()
        with connection.cursor() as cursor:
            for table in self.tables:
                cursor.execute(f"DROP TABLE IF EXISTS {table}_loaded CASCADE")


def drop_stale_loaded_tables():
    """A bench killed during the idle scale may have left its loaded set, swapped in or not:
    the bench database's schema is then rebuilt by the migrations."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass('durable_workflowrun_loaded') IS NOT NULL")
        if cursor.fetchone()[0]:
            cursor.execute("DROP SCHEMA public CASCADE")
            cursor.execute("CREATE SCHEMA public")


def idle_trials(options, n_idle: int, samples: int) -> dict:
    """Signal to resume with ``n_idle`` waiting runs against the empty database: ``samples``
    signals a side of a trial, in ``options.rounds`` parts that alternate between the empty
    tables and the loaded ones (LoadedTables), and the ratio of the two p50s per trial.

    Taken whole, the empty side then the million (creating it took 15-30 s between them),
    one trial of five read 141% of empty and the others 103-118% (2026-12-02 15:02): the
    machine's drift over that minute, not the million. Compared with the signal trials'
    p50, taken minutes earlier, one trial read 129% (4.68 against 3.64 ms); alternated in a
    probe, the million gave 4.42 and 4.48 ms against 4.53 and 4.71 empty, and its
    statements took 0-10% longer (PostgreSQL's log)."""
    part = max(samples // options.rounds, 10)
    loaded = LoadedTables()

    def empty_part():
        reset_database()
        return {"resume": bench_signal_resume(part, f"empty-{secrets.token_hex(4)}")[0]}

    def loaded_part():
        prefix = f"sig-idle-{secrets.token_hex(4)}"
        loaded.swap()
        try:
            assert WorkflowRun.objects.filter(pk="idle:0").exists(), (
                "the loaded set is not in place"
            )
            resume, _ = bench_signal_resume(part, prefix)
            ticks = sweep_tick_durations(10)
            loaded.forget([f"{prefix}:{i}" for i in range(part)])
        finally:
            loaded.swap()
        return {"resume": resume, "tick_ms": ticks}

    try:
        created = time.perf_counter()
        loaded.create(n_idle)
        create_seconds = time.perf_counter() - created
        taken = alternate(
            {"empty": empty_part, "loaded": loaded_part},
            options.trials,
            options.rounds,
            combine=pooled_parts,
        )
        loaded.swap()
        bytes_per_run = database_bytes_per_run(n_idle)
        sizes = relation_sizes()
        loaded.swap()
    finally:
        loaded.drop()
    empty = [pct(t["resume"], 50) for t in taken["empty"]]
    idle = [pct(t["resume"], 50) for t in taken["loaded"]]
    ticks = [t["tick_ms"] for t in taken["loaded"]]
    pooled = [v for t in taken["loaded"] for v in t["resume"]]
    return {
        "runs": n_idle,
        "samples_per_trial": part * options.rounds,
        "rounds": options.rounds,
        "sweep_tick": {
            "p50_ms": statistics.median(v for t in ticks for v in t),
            "max_ms": max(v for t in ticks for v in t),
            "trials_p50_ms": [statistics.median(t) for t in ticks],
        },
        "resume_ms": {"p50": pct(pooled, 50), "p95": pct(pooled, 95), "p99": pct(pooled, 99)},
        "resume_p50_ms": summary(idle),
        "empty_resume_p50_ms": summary(empty),
        "resume_vs_empty": ratio(idle, empty),
        "bytes_per_run": bytes_per_run,
        "sizes": sizes,
        "create_seconds": create_seconds,
    }


def sweep_tick_durations(ticks: int) -> list[float]:
    durations = []
    for _ in range(ticks):
        t0 = time.perf_counter()
        sweep.sweep_due()
        durations.append((time.perf_counter() - t0) * 1000)
    return durations


def bench_sweep_tick(ticks: int = 50) -> dict:
    durations = sweep_tick_durations(ticks)
    return {"p50_ms": statistics.median(durations), "max_ms": max(durations)}


# --- 5. timer lateness -------------------------------------------------------------------


def bench_timer_lateness(count: int, rng) -> list[float]:
    ids = [f"timer:{i}" for i in range(count)]
    with transaction.atomic():
        for run_id in ids:
            services.run_start(
                "bench_timer", round(rng.uniform(1.0, 4.0), 3), id=run_id, actor="bench"
            )
    wait_until(
        lambda: WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.COMPLETED).count() == count,
        timeout=120,
    )
    woke = dict(
        JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.STEP).values_list(
            "run_id", "created_at"
        )
    )
    due = dict(
        JournalEntry.objects.filter(run_id__in=ids, kind=EntryKind.SLEEP).values_list(
            "run_id", "wake_at"
        )
    )
    return [(woke[r] - due[r]).total_seconds() for r in ids]


def database_bytes_per_run(count: int) -> float:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_total_relation_size('durable_workflowrun') + "
            "pg_total_relation_size('durable_journalentry')"
        )
        return cursor.fetchone()[0] / count


def relation_sizes() -> dict:
    """Bytes of the run tables' heaps, of the rest of each table ("toast": its TOAST table and
    the heap's free-space and visibility maps) and of each index, by definition: what a
    hundred times as many runs would be planned from (the growth between two idle scales)."""
    sizes = {}
    with connection.cursor() as cursor:
        for table in ("durable_workflowrun", "durable_journalentry"):
            cursor.execute(
                "SELECT pg_relation_size(%s::regclass), "
                "pg_total_relation_size(%s::regclass) - pg_relation_size(%s::regclass) "
                "- pg_indexes_size(%s::regclass)",
                [table] * 4,
            )
            heap, toast = cursor.fetchone()
            cursor.execute(
                # By definition, not name: the loaded set's copies have names of their own.
                "SELECT substring(pg_get_indexdef(i.indexrelid) from ' USING (.*)$'), "
                "pg_relation_size(i.indexrelid) "
                "FROM pg_index i WHERE i.indrelid = %s::regclass ORDER BY 1",
                [table],
            )
            sizes[table] = {"heap": heap, "toast": toast, "indexes": dict(cursor.fetchall())}
    return sizes


def start_peer(python: str, workers: int) -> Peer:
    url = peer_url(os.environ["DATABASE_URL"])
    ensure_database(url)
    return Peer(python, url, workers)


# --- trials ----------------------------------------------------------------------------------


class Turns:
    """Only the side being measured runs. While ours (or the chain, which uses our worker)
    is measured, DBOS's processes are stopped (SIGSTOP): each polls its queue every 50 ms
    and would take CPU from the trial on 2 cores; while DBOS is measured, our worker and
    beat are stopped. A stopped process keeps its connections and resumes where it was."""

    def __init__(self, procs: Processes, peer: Peer | None):
        self.procs, self.peer = procs, peer

    def ours(self, measure):
        def measured(*args):
            if self.peer:
                self.peer.pause()
            self.procs.resume()
            return measure(*args)

        return measured

    def peers(self, measure):
        def measured(*args):
            self.procs.pause()
            self.peer.resume()
            return measure(*args)

        return measured

    def end(self):
        self.procs.resume()
        if self.peer:
            self.peer.resume()


def alternate(measures: dict, count: int, rounds: int = 1, combine=None) -> dict[str, list]:
    """``count`` trials of every measure, taken in turn (A B C A B C ...) so that trial i of
    each sees the same machine.

    With ``rounds`` > 1 a trial is that many short parts and ``combine`` makes the trial's
    figure of its parts; round r of every trial is taken before round r + 1 of any. A trial
    taken whole, one side after the other, let a slow spell of this shared 2-core machine
    fall on one side's trial only (the hypervisor's steal went from 1% to 10% within a
    minute here, and the plain chain alone spread 38% between trials); trials taken one
    after the other set apart what the machine's drift over the minutes of a measure did
    (the bare insert+commit went from 1.75 to 0.70 ms per row from the first trial to the
    last). Interleaved, every trial spans the whole measure, its parts of about a second
    side by side with the other sides' parts; what still sets trials apart is noise within
    seconds, and a drift that moves every trial alike is what two runs of the bench can
    disagree on."""
    parts = [{name: [] for name in measures} for _ in range(count)]
    for _ in range(rounds):
        for trial in parts:
            for name, measure in measures.items():
                trial[name].append(measure())
    return {
        name: [combine(trial[name]) if combine else trial[name][0] for trial in parts]
        for name in measures
    }


def pooled_parts(parts: list[dict]) -> dict:
    """A trial of parts that each return {figure: [values]}: every figure's values of all its
    parts."""
    return {name: [v for p in parts for v in p[name]] for name in parts[0]}


def sized(rate_of, seconds: float, smallest: int = 30, largest: int = 50_000) -> int:
    """How many runs make a part of about `seconds` at steady state, from two warm-up parts
    (which also warm the workers, the connections and PostgreSQL's caches): one of
    ``smallest`` runs, whose rate the start and the tail of a part pull down (the parts it
    sized took 0.7-0.9 of their second), then one of half the size it gives."""

    def clamp(n: float) -> int:
        return max(smallest, min(largest, int(n)))

    rate = rate_of(smallest)
    rate = rate_of(clamp(rate * seconds / 2))
    return clamp(rate * seconds)


def throughput_layout(workers: int, options, procs: Processes, peer_python: str | None) -> dict:
    procs.stop()
    procs.worker(workers)
    procs.beat()
    procs.wait_ready()
    peer = start_peer(peer_python, workers) if peer_python else None
    turns = Turns(procs, peer)
    try:
        measures = {
            "chain": turns.ours(lambda n: bench_chain_floor(n, 3, procs)),
            "ours": turns.ours(lambda n: bench_durable_throughput(n, 3, procs)),
        }
        if peer:
            measures["dbos_direct"] = turns.peers(
                lambda n: n / peer.call("direct", runs=n, steps=3)["seconds"]
            )
            measures["dbos_queue"] = turns.peers(lambda n: bench_dbos_queue(n, 3, peer))
        # The main layout's ratios are the targets: its parts are twice as long, so that a
        # spell of the shared host weighs half as much in each (1-second parts spread 18-20%).
        seconds = options.trial_seconds / options.rounds * (2 if workers == options.workers else 1)
        sizes = {name: sized(measure, seconds) for name, measure in measures.items()}
        print(
            f"  {workers} worker processes, runs per part "
            f"({options.rounds} parts a trial): {sizes}",
            flush=True,
        )
        FILL.clear()  # the producer's cost in the trials, not in the sizing ones
        taken = alternate(
            {name: (lambda m=measure, n=sizes[name]: m(n)) for name, measure in measures.items()},
            options.trials,
            options.rounds,
            combine=report.rate_of_parts,
        )
        fill = {name: summary(values) for name, values in FILL.items()}
        if options.profile and workers == options.workers:
            profile_throughput(procs, peer, sizes, turns)
    finally:
        turns.end()
        if peer:
            peer.stop()
    layout = {name: summary(values) for name, values in taken.items()}
    layout["runs_per_part"] = sizes
    layout["fill_ms_per_run"] = fill
    for name in ("chain", "dbos_direct", "dbos_queue"):
        if name in taken:
            layout[f"ours_vs_{name}"] = ratio(taken["ours"], taken[name])
    return layout


def per_step_trials(options, n_steps: int, peer: Peer | None, turns: Turns) -> dict:
    sql = []
    part = n_steps // options.rounds

    def ours():
        measured = bench_per_step(part)
        sql.append(measured["sql_per_step"])
        return measured["ms_per_step"]

    measures = {"floor": turns.ours(lambda: bench_floor_insert(part)), "ours": turns.ours(ours)}
    if peer:
        # A DBOS step costs several of ours: a quarter of the steps keeps its part about as
        # long as ours (the figure is ms per step, minus a workflow of none, either way).
        measures["dbos"] = turns.peers(
            lambda: peer.call("per_step", steps=max(part // 4, 20))["ms_per_step"]
        )
    taken = alternate(measures, options.trials, options.rounds, combine=statistics.fmean)
    turns.end()
    result = {
        "floor_ms": summary(taken["floor"]),
        "ours_ms": summary(taken["ours"]),
        "sql_per_step": max(sql),
        "over_floor_ms": summary([o - f for o, f in zip(taken["ours"], taken["floor"])]),
    }
    if peer:
        result["dbos_ms"] = summary(taken["dbos"])
        result["ours_vs_dbos"] = ratio(taken["ours"], taken["dbos"])
    return result


def signal_trials(options, n_signals: int, peer: Peer | None, turns: Turns) -> dict:
    part = n_signals // options.rounds

    def ours():
        reset_database()
        resume, send = bench_signal_resume(part, f"sig-{secrets.token_hex(4)}")
        return {"ours": resume, "send": send}

    def dbos():
        # Half as many: DBOS's p50 is the figure compared; our p99 is a target (its p99 of 800
        # a trial spread 18-22% between trials), DBOS's is only shown.
        measured = peer.call("signal", samples=max(part // 2, 25))
        return {"dbos": measured["resume_ms"], "dbos_send": measured["send_ms"]}

    taken = alternate(
        {"ours": turns.ours(ours), "dbos": turns.peers(dbos)} if peer else {"ours": ours},
        options.trials,
        options.rounds,
        combine=pooled_parts,
    )
    turns.end()
    # Each side's trials as {figure: [that trial's latencies]}: one list of trials per figure.
    samples = {
        name: [trial[name] for trial in trials] for trials in taken.values() for name in trials[0]
    }

    def per_trial(name, q):
        return [pct(trial, q) for trial in samples[name]]

    def pooled(name):
        values = [v for trial in samples[name] for v in trial]
        return {"p50": pct(values, 50), "p95": pct(values, 95), "p99": pct(values, 99)}

    result = {
        "ours_p50": summary(per_trial("ours", 50)),
        "ours_p99": summary(per_trial("ours", 99)),
        "send_p50": summary(per_trial("send", 50)),
        "ours_p99_over_p50": ratio(per_trial("ours", 99), per_trial("ours", 50)),
        "ours_percentiles": pooled("ours"),
        "send_percentiles": pooled("send"),
    }
    if peer:
        result.update(
            {
                "dbos_resume_p50": summary(per_trial("dbos", 50)),
                "dbos_resume_p99": summary(per_trial("dbos", 99)),
                "dbos_send_p50": summary(per_trial("dbos_send", 50)),
                "resume_p50_vs_dbos": ratio(per_trial("ours", 50), per_trial("dbos", 50)),
                "resume_p99_vs_dbos": ratio(per_trial("ours", 99), per_trial("dbos", 99)),
                "send_p50_vs_dbos": ratio(per_trial("send", 50), per_trial("dbos_send", 50)),
                "dbos_percentiles": pooled("dbos"),
                "dbos_send_percentiles": pooled("dbos_send"),
            }
        )
    return result


# --- profiling ---------------------------------------------------------------------------------


def profile_throughput(procs: Processes, peer: Peer | None, sizes: dict, turns: Turns) -> None:
    """py-spy on one worker pool process and on this producer during one more trial of ours
    (and on one DBOS worker during a DBOS direct trial): flame graphs and collapsed stacks in
    var/profile/."""
    py_spy = Path(os.environ["BENCH_PEERS_PYTHON"]).parent / "py-spy"
    out = ROOT / "var" / "profile"
    out.mkdir(parents=True, exist_ok=True)

    def record(targets: dict, run):
        spies = []
        for name, pid in targets.items():
            for fmt, suffix in (("flamegraph", "svg"), ("raw", "txt")):
                spies.append(
                    subprocess.Popen(
                        [
                            str(py_spy),
                            "record",
                            "--pid",
                            str(pid),
                            "--rate",
                            "200",
                            "--nonblocking",
                            "--format",
                            fmt,
                            "-o",
                            str(out / f"{name}.{suffix}"),
                        ],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
        time.sleep(1.0)  # py-spy attaches
        run()
        for spy in spies:
            spy.send_signal(signal.SIGINT)
        for spy in spies:
            spy.wait(30)

    n = sizes["ours"] * 2
    record(
        {"ours-worker": procs.worker_children()[0], "ours-producer": os.getpid()},
        turns.ours(lambda: bench_durable_throughput(n, 3, procs)),
    )
    if peer:
        record(
            {"dbos-worker": peer.worker_pids[0]},
            turns.peers(lambda: peer.call("direct", runs=sizes["dbos_direct"] * 2, steps=3)),
        )
    turns.end()
    print(
        f"  profiles in {out.relative_to(ROOT)}/ (summarize with benchmarks/profile_top.py)",
        flush=True,
    )


def main():
    import random

    parser = argparse.ArgumentParser(description="Durable engine benchmarks")
    parser.add_argument("--quick", action="store_true", help="a smoke run: fewer, shorter trials")
    parser.add_argument(
        "--peers", action="store_true", help="measure DBOS beside us (needs ./scripts/bench)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="py-spy a worker and the producer during throughput"
    )
    parser.add_argument("--workers", type=int, default=2, help="the layout of the main figures")
    parser.add_argument(
        "--layouts", default="1,2,4", help="worker processes to measure throughput with"
    )
    parser.add_argument(
        "--trials", type=int, default=None, help="trials per figure (5; 3 with --quick)"
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="parts of a trial, interleaved with the other sides' parts (8; 1 with --quick)",
    )
    parser.add_argument("--idle-runs", type=int, default=None)
    parser.add_argument(
        "--idle-only",
        action="store_true",
        help="the idle scale alone (with --idle-runs 10000000: the ten million)",
    )
    options = parser.parse_args()
    options.trials = options.trials or (3 if options.quick else 5)
    options.trial_seconds = 1.0 if options.quick else 8.0
    options.rounds = options.rounds or (1 if options.quick else 8)
    layouts = sorted({int(w) for w in options.layouts.split(",")} | {options.workers})
    n_steps = 200 if options.quick else 20_000
    n_signals = 50 if options.quick else 3200  # a trial's p99 is its 32nd slowest
    n_idle = options.idle_runs or (10_000 if options.quick else 1_000_000)
    n_idle_signals = 50 if options.quick else 1000  # a side of an idle-scale trial
    n_timers = 30 if options.quick else 100
    rng = random.Random(7)
    peer_python = os.environ.get("BENCH_PEERS_PYTHON") if options.peers else None
    if options.peers and not peer_python:
        parser.error("--peers needs the peers' virtualenv: run it through ./scripts/bench")
    if options.idle_only and (options.peers or options.profile):
        parser.error("--idle-only measures ours alone: no --peers or --profile")

    drop_stale_loaded_tables()
    call_command("migrate", verbosity=0)
    reset_database()
    results = {
        "machine": {"cores": os.cpu_count(), "load_average": os.getloadavg()},
        "when": datetime.now(UTC).isoformat(),
        "workers": options.workers,
        "quick": options.quick,
        "trials": options.trials,
        "trial_seconds": options.trial_seconds,
        "rounds": options.rounds,
        "peers": bool(peer_python),
        "layouts": {},
    }
    procs = Processes()
    if options.idle_only:
        idle_only(options, procs, n_idle, n_idle_signals, results)
        return
    try:
        print(
            "throughput: plain Celery chain, ours"
            + (", DBOS direct and queue" if peer_python else "")
            + f", {options.trials} trials each in turn ...",
            flush=True,
        )
        for workers in layouts:
            results["layouts"][str(workers)] = throughput_layout(
                workers, options, procs, peer_python
            )

        procs.stop()
        procs.worker(options.workers)
        procs.beat()
        procs.wait_ready()
        peer = start_peer(peer_python, options.workers) if peer_python else None
        try:
            print(
                "per step: bare insert+commit, ours" + (", DBOS" if peer else "") + " ...",
                flush=True,
            )
            turns = Turns(procs, peer)
            results["per_step"] = per_step_trials(options, n_steps, peer, turns)
            print(
                "signal to resume and the sender's call"
                + (", DBOS send -> recv" if peer else "")
                + " ...",
                flush=True,
            )
            results["signal"] = signal_trials(options, n_signals, peer, turns)
        finally:
            if peer:
                peer.stop()
        reset_database()
        results["sweep_tick_empty"] = bench_sweep_tick()

        print("timer lateness ...", flush=True)
        late = bench_timer_lateness(n_timers, rng)
        results["timer_lateness_s"] = {"p50": pct(late, 50), "p99": pct(late, 99)}

        idle_part(options, procs, n_idle, n_idle_signals, results)
    finally:
        procs.stop()
        reset_database()

    print()
    print(report.table(results))
    path, stamp = save(results)
    (path.parent / f"{stamp}.svg").write_text(report.chart_svg(results))
    print(f"\nwrote {path.relative_to(ROOT)} and {stamp}.svg")


def idle_only(options, procs: "Processes", n_idle: int, n_idle_signals: int, results: dict):
    """The idle scale on its own, with the same worker layout and trials as a full run's: the
    ten million take about as long to make as a whole full run's other measures."""
    results["idle_only"] = True
    try:
        procs.worker(options.workers)
        procs.beat()
        procs.wait_ready()
        results["sweep_tick_empty"] = bench_sweep_tick()
        idle_part(options, procs, n_idle, n_idle_signals, results)
    finally:
        procs.stop()
        reset_database()
    print()
    print(report.idle_table(results))
    path, _ = save(results)
    print(f"\nwrote {path.relative_to(ROOT)}")


def idle_part(options, procs: "Processes", n_idle: int, n_idle_signals: int, results: dict):
    """The idle scale, the last measure of a run, and the figures read at its end."""
    print(
        f"idle scale: {options.trials} trials of {n_idle:,} "
        "waiting runs against the empty database ...",
        flush=True,
    )
    results["idle"] = idle_trials(options, n_idle, n_idle_signals)
    results["worker_rss_mib"] = procs.rss_mib()
    results["machine"]["load_average_after"] = os.getloadavg()


def save(results: dict):
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    path = out / f"{stamp}.json"
    path.write_text(json.dumps(results, indent=2))
    return path, stamp


if __name__ == "__main__":
    main()
