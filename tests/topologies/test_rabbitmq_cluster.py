"""A RabbitMQ node killed under the engine: quorum queues on a three-node cluster, workers
and beat given all three URLs, and the node holding the default queue's leader killed -9
while runs flow. Needs ``scripts/topology/rabbitmq-cluster start``."""

import os
import random
import re
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection
from django.db.models import Sum

from durable.models import EntryStatus, JournalEntry, RunStatus, WorkflowRun
from tests.faults.harness import (
    FAULT_TIMINGS,
    later_runs_reach_every_worker,
    settle,
    start_chaos,
    wait_for_all,
)
from tests.workers import celery_processes as running_celery
from tests.workers import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]

RUNS = int(os.environ.get("RABBITMQ_CLUSTER_RUNS", "80"))
SEED = int(os.environ.get("FAULT_SEED", "20261130"))
CONNECTED = re.compile(r"^(\S+ \S+) INFO celery\.worker\.consumer\.connection .*Connected to (\S+)")


@pytest.fixture
def victim(rabbitmq_cluster) -> str:
    """The node to kill: the one holding the default queue's leader."""
    return rabbitmq_cluster.leader("celery")


# Where the workers and beat are connected when the leader's node is killed. On their own
# node, they reconnect (under 100 ms) while the queues elect new leaders: beat's channel
# then asked the dead node, and without publisher confirms its sweeps were dropped (1 run
# in 3 stalled); config/beat.py.
CLIENTS = [
    pytest.param(False, id="clients-on-another-node"),
    pytest.param(True, id="clients-on-the-killed-node"),
]


@pytest.fixture(params=CLIENTS)
def celery_processes(request, tmp_path, settings, rabbitmq_cluster, victim):
    """Workers and beat on the cluster's three URLs and quorum queues, with the fault
    suite's short lease and tick; the test process only writes rows, beat's sweep sends."""
    settings.DURABLE_DISPATCHER = "none"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 0.3
    with running_celery(
        tmp_path,
        CELERY_BROKER_URL=rabbitmq_cluster.urls_with(victim, first=request.param),
        CELERY_QUEUE_TYPE="quorum",
        **FAULT_TIMINGS,
    ) as processes:
        yield processes


class ResendWatch(threading.Thread):
    """Samples the runs the sweep has sent again with no worker claiming them in between
    (``resends`` >= 2: the pick sets 1, a claim resets it to 0): the message before was
    lost, or waited on the broker longer than the grace period. Each time a run enters that
    state counts once. A lower bound: a resend claimed within one sample goes unseen."""

    def __init__(self, run_ids: list[str], every: float = 0.05):
        super().__init__(daemon=True)
        self.run_ids, self.every = run_ids, every
        self.resent_at: list[float] = []  # time.time() of each run's entering the state
        self.stopping = threading.Event()

    def run(self):
        before: set[str] = set()
        try:
            while not self.stopping.is_set():
                now = time.time()
                resent = set(
                    WorkflowRun.objects.filter(pk__in=self.run_ids, resends__gte=2).values_list(
                        "pk", flat=True
                    )
                )
                self.resent_at.extend(now for _ in resent - before)
                before = resent
                time.sleep(self.every)
        finally:
            connection.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(timeout=10)

    def count(self, *, after: float = 0.0, before: float = float("inf")) -> int:
        return sum(1 for at in self.resent_at if after <= at < before)


def reconnections(log_dir: Path, *, after: float) -> dict[str, float]:
    """Each worker's first "Connected to" after ``after``: seconds after it, and where to."""
    found = {}
    for log in sorted(log_dir.glob("w*.log")):
        for line in log.read_text(errors="replace").splitlines():
            match = CONNECTED.match(line)
            if not match:
                continue
            at = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
            if at >= after:
                found[f"{log.stem} -> {match[2]}"] = round(at - after, 2)
                break
    return found


def failed_sends(log_dir: Path) -> int:
    """Advances a worker could not publish (``durable.tasks.send_advance``): the sweep's."""
    return sum(
        log.read_text(errors="replace").count("could not send the advance message")
        for log in log_dir.glob("w*.log")
    )


def total_advances(run_ids: list[str]) -> int:
    return WorkflowRun.objects.filter(pk__in=run_ids).aggregate(n=Sum("advances"))["n"] or 0


@pytest.mark.timeout(900)
def test_every_run_completes_once_when_the_default_queues_leader_node_is_killed(
    celery_processes, rabbitmq_cluster, victim, tmp_path
):
    celery = celery_processes
    rng = random.Random(SEED)
    run_ids, sender = start_chaos(celery, rng, runs=RUNS, spread=12)
    pids = {name: proc.pid for name, proc in celery.procs.items()}
    types = rabbitmq_cluster.queue_types()
    assert {types.get(queue) for queue in ("celery", "durable-takeover", "durable-sweep")} == {
        "quorum"
    }, f"the engine's queues are not quorum queues: {types}"
    watch = ResendWatch(run_ids)
    watch.start()
    wait_until(  # runs in flight: about half their steps are journaled
        lambda: JournalEntry.objects.filter(run_id__in=run_ids).count() >= 2 * RUNS,
        timeout=180,
        interval=0.1,
        message="runs to be under way",
    )

    started_at = min(
        WorkflowRun.objects.filter(pk__in=run_ids).values_list("created_at", flat=True)
    )
    killed_at = time.time()  # the node is dead when kill() returns, some 50 ms later
    rabbitmq_cluster.kill(victim)
    unfinished = WorkflowRun.objects.filter(pk__in=run_ids).exclude(status=RunStatus.COMPLETED)
    in_flight = unfinished.count()
    advances_at_kill = total_advances(run_ids)
    wait_until(
        lambda: total_advances(run_ids) > advances_at_kill,
        timeout=90,
        interval=0.05,
        message="an advance after the node was killed",
    )
    first_advance = time.time() - killed_at
    wait_for_all(run_ids, timeout=300)
    all_done = time.time() - killed_at
    watch.stop()

    totals = settle(
        run_ids,
        sender,
        f"{victim} killed -9 (the default queue's leader)",
        in_flight_at_kill=in_flight,
        resent_before_kill=watch.count(before=killed_at),
        resent_after_kill=watch.count(after=killed_at),
        sends_failed=failed_sends(tmp_path),
        takeovers=sum(
            WorkflowRun.objects.filter(pk__in=run_ids).values_list("recoveries", flat=True)
        ),
    )
    new_leader = rabbitmq_cluster.leader("celery", asking=other(victim))
    print(
        f"[topology] runs started {killed_at - started_at.timestamp():.1f} s before the kill; "
        f"first advance {first_advance:.2f} s after the kill, all runs completed "
        f"{all_done:.2f} s after it; new leader of celery: {new_leader}; "
        f"workers reconnected (s after the kill): {reconnections(tmp_path, after=killed_at)}"
    )
    assert in_flight >= RUNS // 4, "the runs finished before the node was killed: it proved nothing"
    assert totals["duplicates"] == 0, "a step's external effect ran twice"
    assert (
        not JournalEntry.objects.filter(run_id__in=run_ids)
        .exclude(status=EntryStatus.COMPLETED)
        .exists()
    ), "a journal entry was left unfinished"
    alive = {name: proc.pid for name, proc in celery.procs.items() if proc.poll() is None}
    assert alive == pids, f"a worker or beat exited instead of reconnecting: {pids} -> {alive}"

    later_runs_reach_every_worker(rng, first=1000, after="the kill", timeout=180)
    print(f"[topology] {victim} restarted and rejoined in {rabbitmq_cluster.start():.1f} s")


def other(node: str) -> int:
    """A node to ask while ``node`` is down."""
    return 2 if node.startswith("durable1@") else 1
