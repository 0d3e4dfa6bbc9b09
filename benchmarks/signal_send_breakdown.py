"""Where the sender's call goes: ``signal_send``'s statements, its commit, and the Celery
message it sends after the commit. Issue 17 compares the whole call with DBOS ``send()``.

    .venv/bin/python benchmarks/signal_send_breakdown.py [--samples 300] [--profile 25]

Same database and Redis as benchmarks/run.py (durable_bench, db 9; DATABASE_URL and
CELERY_BROKER_URL override them). No worker runs: the runs wait in the database and only
the sender is timed. Prints the p50 of each part, in milliseconds.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from benchmarks.run import BROKER, reset_database  # noqa: E402  (sets Django up)
from durable import services
from durable.runtime import executor  # noqa: E402
from durable.tasks import send_advance  # noqa: E402


def waiting_runs(prefix: str, count: int) -> list[str]:
    ids = [f"{prefix}:{i}" for i in range(count)]
    with transaction.atomic():
        for run_id in ids:
            services.run_start("bench_signal", id=run_id, actor="bench")
    for run_id in ids:
        executor.advance(run_id)  # in-process, to its wait for "go"
    return ids


def p50(values: list[float]) -> float:
    return statistics.median(values)


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument(
        "--profile",
        type=int,
        metavar="N",
        default=0,
        help="then cProfile as many whole calls more and print the top N frames by cumulative time",
    )
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    reset_database()
    BROKER.flushdb()

    settings.DURABLE_DISPATCHER = "none"
    ids = waiting_runs("bd", 2 * options.samples)
    statements: dict[str, list[float]] = {}
    whole, tx_only, publish = [], [], []

    def timing(execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            label = f"{sql.split()[0]} {_table(sql)}"
            statements.setdefault(label, []).append((time.perf_counter() - started) * 1000)

    # Interleaved, so both kinds of call see the same machine and the same table sizes.
    for i, run_id in enumerate(ids):
        if i % 2:
            settings.DURABLE_DISPATCHER = "celery"
            whole.append(
                timed(
                    lambda run_id=run_id: services.signal_send(
                        run_id, "go", {"n": 1}, actor="bench"
                    )
                )
            )
            publish.append(
                timed(lambda run_id=run_id: send_advance(run_id))
            )  # one more message, alone
        else:
            settings.DURABLE_DISPATCHER = "none"
            with connection.execute_wrapper(timing):
                tx_only.append(
                    timed(
                        lambda run_id=run_id: services.signal_send(
                            run_id, "go", {"n": 1}, actor="bench"
                        )
                    )
                )
    settings.DURABLE_DISPATCHER = "celery"
    BROKER.flushdb()

    print(f"signal_send, {options.samples} samples, p50 ms")
    print(f"  whole call (transaction, then the Celery message)   {p50(whole):6.2f}")
    print(f"  the transaction alone (no message)                   {p50(tx_only):6.2f}")
    print(f"  the Celery message alone (apply_async to Redis)      {p50(publish):6.2f}")
    print("  its statements, sent and answered (COMMIT is the connection's, not a statement: it")
    print("  is in the rest of the transaction, with Python):")
    total = 0.0
    for name, times in statements.items():
        total += sum(times) / options.samples
        print(f"    {name:<50} {p50(times):6.3f}  x{len(times) / options.samples:.1f} per call")
    print(f"    {'all statements, mean per call':<50} {total:6.3f}")
    if options.profile:
        profile(options)


def profile(options) -> None:
    """cProfile of whole calls (the message included): where the sender's time goes."""
    import cProfile
    import io
    import pstats

    settings.DURABLE_DISPATCHER = "none"
    ids = waiting_runs("bp", options.samples)
    settings.DURABLE_DISPATCHER = "celery"
    profiler = cProfile.Profile()
    profiler.enable()
    for run_id in ids:
        services.signal_send(run_id, "go", {"n": 1}, actor="bench")
    profiler.disable()
    BROKER.flushdb()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(options.profile)
    print(
        f"\ncProfile of {options.samples} whole calls, "
        f"top {options.profile} frames by cumulative time:"
    )
    print("\n".join(line for line in out.getvalue().splitlines() if line.strip())[-6000:])


def _table(sql: str) -> str:
    """The table a statement writes or reads first (a label for the breakdown)."""
    for word in ("INTO ", "UPDATE ", "FROM "):
        if word in sql:
            return sql.split(word, 1)[1].split()[0].strip('"')
    return ""


if __name__ == "__main__":
    main()
