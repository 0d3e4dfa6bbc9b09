"""Chaos for the fault suite: start runs, send their signals, break things, then check
every guarantee the engine makes and print the totals."""

import random
import threading
import time
from collections import Counter

from django.db import connection

from durable import services
from durable.models import EntryKind, JournalEntry, RunStatus, Signal, WorkflowRun
from tests.effects.models import Effect

# The workers' and beat's timings under fault: a lease lost is taken over, and a message
# lost is sent again, within seconds rather than the production defaults' tens of seconds.
FAULT_TIMINGS = {
    "DURABLE_LEASE_SECONDS": "2",
    "DURABLE_DISPATCH_GRACE_SECONDS": "1",
    "DURABLE_SWEEP_INTERVAL_SECONDS": "0.5",
}


def start_runs(count: int, *, first: int = 0) -> list[str]:
    return [
        services.run_start("fault_order", n, id=f"fault:{n}", actor="test").id
        for n in range(first, first + count)
    ]


class SignalSender(threading.Thread):
    """Sends each run's "go" at a random moment, and redelivers some of them."""

    def __init__(self, run_ids: list[str], rng: random.Random, spread: float = 8.0):
        super().__init__(daemon=True)
        self.plan = sorted(
            (rng.uniform(0, spread), run_id, rng.random() < 0.3) for run_id in run_ids
        )
        self.sent = 0
        self.error: BaseException | None = None

    def run(self):
        started = time.monotonic()
        try:
            for at, run_id, redeliver in self.plan:
                time.sleep(max(0.0, at - (time.monotonic() - started)))
                for _ in range(2 if redeliver else 1):
                    services.signal_send(
                        run_id,
                        "go",
                        {"token": f"t-{run_id}"},
                        dedupe_key=f"{run_id}:go",
                        actor="test",
                    )
                    self.sent += 1
        except BaseException as exc:  # surfaced by the test
            self.error = exc
        finally:
            connection.close()


def start_chaos(
    celery, rng: random.Random, *, runs: int, spread: float, beats: tuple[str, ...] = ("beat",)
) -> tuple[list[str], SignalSender]:
    """Two workers, the beats, ``runs`` runs, and their signals on the way."""
    celery.start_worker("w0")
    celery.start_worker("w1")
    for beat in beats:
        celery.start_beat(beat)
    run_ids = start_runs(runs)
    sender = SignalSender(run_ids, rng, spread=spread)
    sender.start()
    return run_ids, sender


def settle(run_ids: list[str], sender: SignalSender, title: str, **counts) -> Counter:
    """After the chaos: every signal was sent, every guarantee holds; print the totals."""
    sender.join(timeout=60)
    assert sender.error is None, f"sending a signal failed: {sender.error!r}"
    totals = check_guarantees(run_ids)
    totals.update(counts)
    report(title, totals)
    return totals


def later_runs_reach_every_worker(
    rng: random.Random, *, first: int, after: str, timeout: float = 120
) -> Counter:
    """After a fault: 16 new runs complete with every guarantee, and steps of both workers
    (w0, w1) among them, which only workers still consuming can do."""
    later = start_runs(16, first=first)
    sender = SignalSender(later, rng, spread=1.0)
    sender.start()
    wait_for_all(later, timeout=timeout)
    totals = settle(later, sender, f"runs started after {after}")
    nodes = set(Effect.objects.filter(run_id__in=later).values_list("worker", flat=True))
    assert {node.split("-")[0] for node in nodes} >= {"w0", "w1"}, (
        f"after {after} only {sorted(nodes)} ran steps"
    )
    return totals


def wait_for_all(run_ids: list[str], *, timeout: float, chaos=None) -> None:
    deadline = time.monotonic() + timeout
    while True:
        done = WorkflowRun.objects.filter(pk__in=run_ids, status=RunStatus.COMPLETED).count()
        if done == len(run_ids):
            return
        if time.monotonic() > deadline:
            stuck = list(
                WorkflowRun.objects.filter(pk__in=run_ids)
                .exclude(status=RunStatus.COMPLETED)
                .values_list("id", "status", "waiting_for", "error")[:10]
            )
            raise AssertionError(f"{len(run_ids) - done} runs did not complete, e.g. {stuck}")
        if chaos:
            chaos()
        time.sleep(0.1)


def check_guarantees(run_ids: list[str]) -> Counter:
    """Assert every guarantee, and return the totals to print."""
    totals = Counter(runs=len(run_ids))
    runs = {run.id: run for run in WorkflowRun.objects.filter(pk__in=run_ids)}
    assert all(run.status == RunStatus.COMPLETED for run in runs.values()), "a run did not complete"
    for run in runs.values():
        assert run.result == {"n": int(run.id.split(":")[1]), "token": f"t-{run.id}"}

    positions: dict[str, list[int]] = {}
    for run_id, position in JournalEntry.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "position"
    ):
        positions.setdefault(run_id, []).append(position)
    for run_id in run_ids:
        got = sorted(positions.get(run_id, []))
        assert got == list(range(5)), f"{run_id}: journal positions {got} have a gap or a duplicate"

    per_key = Counter(
        Effect.objects.filter(run_id__in=run_ids).values_list("name", "idempotency_key")
    )
    for run_id in run_ids:
        assert per_key[("ledger", f"{run_id}:ledger")] == 1, (
            f"{run_id}: our own effect did not happen once"
        )
        for name in ("charge", "notify"):
            count = per_key[(name, f"{run_id}:{name}")]
            assert 1 <= count <= 2, f"{run_id}: external effect {name} happened {count} times"
            totals["duplicates"] += count - 1

    signals = list(
        Signal.objects.filter(run_id__in=run_ids, name="go").values_list(
            "run_id", "consumed_position"
        )
    )
    assert Counter(run_id for run_id, _ in signals) == Counter(dict.fromkeys(run_ids, 1)), (
        "a redelivered signal became two signals, or a signal was lost"
    )
    assert all(position == 3 for _, position in signals), "a signal was not consumed by its wait"
    waits = JournalEntry.objects.filter(run_id__in=run_ids, kind=EntryKind.SIGNAL)
    assert sorted(w.result["signal_id"] for w in waits) == sorted(
        Signal.objects.filter(run_id__in=run_ids).values_list("pk", flat=True)
    ), "a signal was consumed twice"
    # At most three advances are needed without faults (start, timer, signal); more are
    # takeovers after a kill, retries after a lost connection, or duplicate dispatches.
    totals["extra_advances"] = sum(max(0, run.advances - 3) for run in runs.values())
    return totals


def report(title: str, totals: Counter) -> None:
    print(
        f"\n[faults] {title}: "
        + ", ".join(f"{key}={value}" for key, value in sorted(totals.items()))
    )
