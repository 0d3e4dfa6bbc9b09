"""What the hot paths write, in bytes of PostgreSQL WAL: per step, per signal_send, per
resume of a signalled run to its end, and the database size per waiting run. Unlike the
timings these do not move with the machine's load, so a change to the schema or to a
statement shows here exactly (the leaner indexes of migration 0010 were measured so).

    .venv/bin/python benchmarks/write_volume.py [--steps 2000] [--signals 300] [--idle 50000]

Same database as benchmarks/run.py (durable_bench; DATABASE_URL overrides it); no worker
runs: everything is advanced in-process. Its tables are emptied before and after.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from benchmarks.run import create_idle_runs, database_bytes_per_run, reset_database  # noqa: E402 (sets Django up)
from durable import services
from durable.runtime import executor  # noqa: E402


def wal_bytes(action) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_insert_lsn()")
        before = cursor.fetchone()[0]
        action()
        cursor.execute("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), %s)", [before])
        return float(cursor.fetchone()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--signals", type=int, default=300)
    parser.add_argument("--idle", type=int, default=50_000)
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    settings.DURABLE_DISPATCHER = "none"  # nothing is sent: the runs are advanced here
    reset_database()
    try:
        executor.advance(services.run_start("bench_steps", 10, id="wal:warm", actor="bench").id)
        many = services.run_start("bench_steps", options.steps, id="wal:steps", actor="bench")
        per_step = wal_bytes(lambda: executor.advance(many.id)) / options.steps

        ids = [f"wal:signal:{i}" for i in range(options.signals)]
        with transaction.atomic():
            for run_id in ids:
                services.run_start("bench_signal", id=run_id, actor="bench")
        for run_id in ids:
            executor.advance(run_id)  # to its wait
        per_send = wal_bytes(
            lambda: [services.signal_send(r, "go", {"n": 1}, actor="bench") for r in ids]
        ) / len(ids)
        per_resume = wal_bytes(lambda: [executor.advance(r) for r in ids]) / len(ids)

        reset_database()
        create_idle_runs(options.idle)
        per_waiting = database_bytes_per_run(options.idle)
    finally:
        reset_database()
    print(f"WAL bytes per step                       {per_step:8.0f}")
    print(f"WAL bytes per signal_send                {per_send:8.0f}")
    print(f"WAL bytes per resume, signal to the end  {per_resume:8.0f}")
    print(f"database bytes per waiting run ({options.idle:,})  {per_waiting:8.0f}")


if __name__ == "__main__":
    main()
