"""Where signal to resume goes, hop by hop, and what the slowest resumes spend their time on.

    .venv/bin/python benchmarks/resume_hops.py [--signals 1000] [--workers 2] [--no-beat]

The bench's signal measure (benchmarks/run.py), alone: waiting runs signalled one at a time,
20 ms apart, with a worker of the bench's layout and its beat. The worker loads
benchmarks/hops.py, which stamps each advance when its message is off the broker, when its
task starts in a pool process, and when the claim, the journal read and the pending signals
read return, and each sweep tick; the producer stamps the send, the journal entry the resume.
Prints each hop's median and p99 over all resumes, its median and mean in the slowest 2%,
and how many resumes had a sweep tick start during them.
"""

import argparse
import statistics
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.core.management import call_command  # noqa: E402

from benchmarks import hops  # noqa: E402
from benchmarks.report import pct  # noqa: E402
from benchmarks.run import (
    BROKER,
    EntryKind,
    JournalEntry,
    Processes,
    RunStatus,
    WorkflowRun,  # noqa: E402
    reset_database,
    services,
    transaction,
    wait_until,
)

HOPS = ["received", "prerun", "claimed", "loaded", "signals"]
SEGMENTS = [
    "send -> off the broker",
    "-> task starts (pool)",
    "-> claimed",
    "-> journal read",
    "-> signals read",
    "-> wait recorded",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--signals", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--no-beat", action="store_true", help="no sweep ticks (the beat is part of the tail)"
    )
    options = parser.parse_args()
    call_command("migrate", verbosity=0)
    reset_database()
    BROKER.flushdb()
    for old in hops.OUT.glob("*.txt"):
        old.unlink()
    procs = Processes()
    procs.worker_proc = None
    procs._start(
        [
            "worker",
            "--concurrency",
            str(options.workers),
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "-I",
            "benchmarks.tasks,benchmarks.hops",
            "--loglevel",
            "WARNING",
        ]
    )
    if not options.no_beat:
        procs.beat()
    try:
        procs.wait_ready()
        ids = [f"hops:{i}" for i in range(options.signals)]
        with transaction.atomic():
            for run_id in ids:
                services.run_start("bench_signal", id=run_id, actor="bench")
        wait_until(
            lambda: (
                WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.WAITING).count() == len(ids)
            )
        )
        time.sleep(1.0)  # the last parks' acks
        sent = {}
        for run_id in ids:
            services.signal_send(run_id, "go", {"n": 1}, actor="bench")
            sent[run_id] = datetime.now(UTC).timestamp()
            time.sleep(0.02)
        wait_until(
            lambda: (
                WorkflowRun.objects.filter(pk__in=ids, status=RunStatus.COMPLETED).count()
                == len(ids)
            )
        )
    finally:
        procs.stop()
    resumed = {
        run_id: at.timestamp()
        for run_id, at in JournalEntry.objects.filter(
            run_id__in=ids, kind=EntryKind.SIGNAL
        ).values_list("run_id", "updated_at")
    }
    reset_database()
    report(ids, sent, resumed, options)


def stamps() -> tuple[dict, list[float]]:
    """The last stamp of each hop of each run (its resume, not its first advance), and
    every sweep tick."""
    found, ticks = defaultdict(dict), []
    for path in hops.OUT.glob("*.txt"):
        for line in path.read_text().splitlines():
            run_id, hop, at = line.split()
            if hop == "sweep":
                ticks.append(float(at))
            else:  # the pool processes write files of their own: the latest stamp is the resume's
                found[run_id][hop] = max(float(at), found[run_id].get(hop, 0.0))
    return found, sorted(ticks)


def report(ids, sent, resumed, options) -> None:
    found, ticks = stamps()
    rows = []
    for run_id in ids:
        hop_times = found.get(run_id, {})
        if all(h in hop_times for h in HOPS):
            points = [sent[run_id], *(hop_times[h] for h in HOPS), resumed[run_id]]
            rows.append([(b - a) * 1000 for a, b in zip(points, points[1:])])
    totals = [(resumed[r] - sent[r]) * 1000 for r in ids]
    p50, p99 = pct(totals, 50), pct(totals, 99)
    print(
        f"signal to resume, {len(ids)} signals{' (no beat)' if options.no_beat else ''}: "
        f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, p99/p50 {p99 / p50:.2f}"
    )
    cut = pct([sum(r) for r in rows], 98)
    slow = [r for r in rows if sum(r) >= cut]
    print(f"hop by hop ({len(rows)} resumes with every stamp; the slowest 2% are {len(slow)}), ms:")
    print(f"  {'hop':<26}{'median':>8}{'p99':>8}   slowest 2%: median  mean")
    for i, name in enumerate(SEGMENTS):
        every = [r[i] for r in rows]
        print(
            f"  {name:<26}{statistics.median(every):8.2f}{pct(every, 99):8.2f}"
            f"   {statistics.median(r[i] for r in slow):17.2f}"
            f"{statistics.fmean(r[i] for r in slow):6.2f}"
        )
    slowest = sorted(ids, key=lambda r: resumed[r] - sent[r])[-max(1, len(ids) // 50) :]
    met = sum(any(sent[r] - 0.005 <= t <= resumed[r] for t in ticks) for r in slowest)
    everyone = sum(any(sent[r] - 0.005 <= t <= resumed[r] for t in ticks) for r in ids)
    print(
        f"a sweep tick started during the resume (or 5 ms before it): {met} of the "
        f"slowest {len(slowest)}, {everyone} of all {len(ids)} ({len(ticks)} ticks)"
    )


if __name__ == "__main__":
    main()
