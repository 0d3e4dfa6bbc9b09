"""Several worker hosts on one PostgreSQL and one broker: network namespaces joined to this
machine by veth pairs, each with a worker that reaches both over its own link.

PostgreSQL and the broker listen on 127.0.0.1 only; a forwarder (tests/faults/forward.py)
listens on this machine's end of each link, so a host cut off is cut off from both. The
workers run with a 2 s lease and a 0.5 s sweep tick (tests/faults/conftest.py), so
"lease + two ticks" is 3 s here.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.conf import settings
from django.db import connection

from durable import clock, services
from durable.models import EntryKind, JournalEntry, RunStatus, Signal, WorkflowRun
from tests.effects.models import Effect
from tests.faults.harness import SignalSender, wait_for_all
from tests.support import ROOT, database_url
from tests.workers import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the hosts share one PostgreSQL over their links; SQLite is one machine's file",
    ),
    pytest.mark.skipif(
        urlsplit(settings.CELERY_BROKER_URL).scheme not in ("redis", "amqp"),
        reason="the hosts reach the broker over their links: needs a redis:// or amqp:// broker",
    ),
]

LEASE, TICK = 2.0, 0.5
SLACK = 2.5  # the sweep runs on a worker, and the advance it sends queues behind 200 runs' work
RUNS = 200
ARRIVE, SIGNAL, BOOK, SHIP = range(4)  # fault_hosts' journal positions
BROKER_PORTS = {"redis": 6379, "amqp": 5672}
STALE_LINES = (": fenced", "could not hand the run back")  # durable/runtime/executor.py's log lines


@dataclass(eq=False)
class Host:
    """A network namespace with one veth link to this machine; its workers dial ``address``."""

    name: str
    namespace: str
    link: str  # this machine's end of the veth pair
    address: str  # this machine's address on the link
    env: dict = field(default_factory=dict)
    processes: list = field(default_factory=list)  # names in CeleryProcesses.procs

    @property
    def prefix(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.namespace)

    @property
    def inode(self) -> int:
        return os.stat(f"/run/netns/{self.namespace}").st_ino


def ip(*args: str) -> str:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def free_subnets(count: int) -> list[int]:
    """Third octets of 10.231.X.0/30 subnets no interface on this machine uses."""
    used = ip("-o", "-4", "addr", "show")
    start = os.getpid() % 250
    candidates = [(start + k) % 250 + 1 for k in range(250)]
    return [x for x in candidates if f" 10.231.{x}." not in used][:count]


def via(url: str, address: str, port: int) -> str:
    """``url`` with its host and port replaced: the same service, reached over a host's link."""
    parts = urlsplit(url)
    auth = parts.netloc.rpartition("@")[0]
    return urlunsplit(
        parts._replace(netloc=f"{auth}@{address}:{port}" if auth else f"{address}:{port}")
    )


def remove_leftovers() -> None:
    """Namespaces an earlier test process made and could not remove (it was SIGKILLed);
    their veth links go with them."""
    for line in ip("netns", "list").splitlines():
        name = line.split()[0]
        match = re.fullmatch(r"dur-(\d+)-.*", name)
        if match and not Path(f"/proc/{match[1]}").exists():
            subprocess.run(["ip", "netns", "del", name], capture_output=True)


def namespaces_or_skip(prefix: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2's ip")
    probe = f"{prefix}probe"
    try:
        ip("netns", "add", probe)
    except RuntimeError as exc:
        pytest.skip(f"network namespaces cannot be made here: {exc}")
    ip("netns", "del", probe)
    remove_leftovers()


@pytest.fixture
def hosts(celery_processes, request):
    """Three hosts, and a forwarder from each link to PostgreSQL and the broker; all of it
    (processes, forwarder, links, namespaces) is gone after the test, failed or not."""
    prefix = f"dur-{os.getpid()}-"
    namespaces_or_skip(prefix)
    made: list[Host] = []
    forwarder = None

    def clean_up():
        for host in made:  # a frozen process would sit out the stop's grace period
            for name in host.processes:
                proc = celery_processes.procs.get(name)
                if proc is not None and proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGCONT)
        celery_processes.stop()
        if forwarder is not None:
            forwarder.kill()
            forwarder.wait(timeout=10)
        for host in made:
            subprocess.run(["ip", "link", "del", host.link], capture_output=True)
            subprocess.run(["ip", "netns", "del", host.namespace], capture_output=True)

    request.addfinalizer(clean_up)
    for number, octet in enumerate(free_subnets(3), start=1):
        host = Host(
            name=f"h{number}",
            namespace=f"{prefix}h{number}",
            link=f"dur{os.getpid()}h{number}",
            address=f"10.231.{octet}.1",
        )
        ip("netns", "add", host.namespace)
        made.append(host)
        peer = f"{host.link}p"
        ip("link", "add", host.link, "type", "veth", "peer", "name", peer, "netns", host.namespace)
        ip("addr", "add", f"{host.address}/30", "dev", host.link)
        ip("link", "set", host.link, "up")
        ip("-n", host.namespace, "addr", "add", f"10.231.{octet}.2/30", "dev", peer)
        ip("-n", host.namespace, "link", "set", peer, "up")
        ip("-n", host.namespace, "link", "set", "lo", "up")

    database, broker = urlsplit(database_url()), urlsplit(settings.CELERY_BROKER_URL)
    targets = {
        "database": f"{database.hostname}:{database.port or 5432}",
        "broker": f"{broker.hostname}:{broker.port or BROKER_PORTS[broker.scheme]}",
    }
    routes = [f"{host.address}:0={target}" for host in made for target in targets.values()]
    forwarder = subprocess.Popen(
        [sys.executable, "-m", "tests.faults.forward", *routes],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    bound = {}
    for line in forwarder.stdout:
        if line.strip() == "ready":
            break
        route, address = line.split()
        bound[route] = int(address.rsplit(":", 1)[1])
    assert len(bound) == len(routes), "the forwarder did not bind every route"
    for host in made:
        host.env = {
            "FAULT_HOST": host.name,
            "DATABASE_URL": via(
                database_url(), host.address, bound[f"{host.address}:0={targets['database']}"]
            ),
            "CELERY_BROKER_URL": via(
                settings.CELERY_BROKER_URL,
                host.address,
                bound[f"{host.address}:0={targets['broker']}"],
            ),
        }
    return made


def start_host(celery, host: Host, *, beat: bool = False) -> None:
    celery.start_worker(host.name, concurrency=2, prefix=host.prefix, env=host.env)
    host.processes.append(host.name)
    if beat:
        celery.start_beat(f"{host.name}-beat", prefix=host.prefix, env=host.env)
        host.processes.append(f"{host.name}-beat")


class Owners:
    """Which host a lease owner (host:pid:thread) is on: its process's network namespace.
    The namespaces share this machine's host name, so the name in the owner cannot say."""

    def __init__(self, hosts: list[Host]):
        self.by_inode = {host.inode: host for host in hosts}
        self.by_pid: dict[int, Host | None] = {}

    def host_of(self, owner: str) -> Host | None:
        pid = int(owner.split(":")[1])
        if pid not in self.by_pid:
            try:
                self.by_pid[pid] = self.by_inode.get(os.stat(f"/proc/{pid}/ns/net").st_ino)
            except FileNotFoundError:
                return None
        return self.by_pid[pid]


def in_flight_on(host: Host, owners: Owners) -> dict[str, tuple[int, int]]:
    """The runs ``host`` holds a lease on: run id -> (fencing token, journal length)."""
    held = {
        run_id: token
        for run_id, owner, token in WorkflowRun.objects.filter(
            workflow_name="fault_hosts", status=RunStatus.RUNNING
        )
        .exclude(lease_owner="")
        .values_list("id", "lease_owner", "fencing_token")
        if owners.host_of(owner) is host
    }
    lengths = Counter(JournalEntry.objects.filter(run_id__in=held).values_list("run_id", flat=True))
    return {run_id: (token, lengths[run_id]) for run_id, token in held.items()}


def wait_until_mid_step(host: Host, owners: Owners, *, timeout: float = 20) -> None:
    """Until ``host`` is inside both steps after the signal (one in each of its two slots);
    after half the timeout, inside either will do."""
    started = time.monotonic()
    while True:
        positions = {length for _, length in in_flight_on(host, owners).values()}
        if {BOOK, SHIP} <= positions or (
            positions & {BOOK, SHIP} and time.monotonic() - started > timeout / 2
        ):
            return
        assert time.monotonic() - started < timeout, f"{host.name} was never seen inside a step"
        time.sleep(0.01)


def cut_off(celery, host: Host) -> float:
    """Freeze every process of ``host`` (SIGSTOP on each process group: prefork children
    included), then take its link down. Returns the moment it froze."""
    for name in host.processes:
        os.killpg(celery.procs[name].pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    ip("link", "set", host.link, "down")
    return frozen_at


def reconnect(celery, host: Host) -> None:
    ip("link", "set", host.link, "up")
    for name in host.processes:
        os.killpg(celery.procs[name].pid, signal.SIGCONT)


def wait_for_takeover(cut: dict[str, tuple[int, int]], frozen_at: float) -> dict[str, float]:
    """Seconds from the freeze until another worker claimed each run (its token moved on)."""
    taken_over: dict[str, float] = {}

    def every_run_taken_over():
        tokens = dict(WorkflowRun.objects.filter(pk__in=cut).values_list("id", "fencing_token"))
        for run_id, (token, _) in cut.items():
            if run_id not in taken_over and tokens[run_id] > token:
                taken_over[run_id] = time.monotonic() - frozen_at
        return len(taken_over) == len(cut)

    wait_until(
        every_run_taken_over, timeout=60, interval=0.02, message="the other hosts to take over"
    )
    return taken_over


def stale_lines(celery, host: Host, run_id: str) -> list[str]:
    """What ``host``'s worker logged about its own attempt on ``run_id`` being refused."""
    log = (celery.log_dir / f"{host.name}.log").read_text(errors="replace")
    return [
        line
        for line in log.splitlines()
        if f"run {run_id}:" in line and any(mark in line for mark in STALE_LINES)
    ]


def test_a_host_cut_off_mid_step_loses_its_runs_to_the_others_and_is_fenced_when_it_returns(
    celery_processes, hosts, rng
):
    celery = celery_processes
    for number, host in enumerate(hosts):
        start_host(celery, host, beat=number == 0)
    victim, owners = hosts[-1], Owners(hosts)
    run_ids = [
        services.run_start("fault_hosts", n, id=f"hosts:{n}", actor="test").id for n in range(RUNS)
    ]
    wait_until(
        lambda: JournalEntry.objects.filter(run_id__in=run_ids, position=ARRIVE).count() == RUNS,
        timeout=180,
        interval=0.2,
        message="every run to arrive",
    )
    arrivals = Counter(
        JournalEntry.objects.filter(run_id__in=run_ids, position=ARRIVE).values_list(
            "result", flat=True
        )
    )
    assert all(arrivals[host.name] >= RUNS // 20 for host in hosts), (
        f"the runs did not spread across the hosts: {dict(arrivals)}"
    )

    sender = SignalSender(run_ids, rng, spread=25)
    sender.start()
    time.sleep(3)  # a steady flow of signals, advances and steps on every host
    wait_until_mid_step(victim, owners)
    frozen_at = cut_off(celery, victim)
    try:
        time.sleep(0.2)  # a write already on the wire when the link went down lands by now
        cut = in_flight_on(victim, owners)
        assert {length for _, length in cut.values()} & {BOOK, SHIP}, (
            "the host was not cut off inside a step"
        )
        taken_over = wait_for_takeover(cut, frozen_at)
        new_holders = {
            owners.host_of(owner)
            for owner in WorkflowRun.objects.filter(pk__in=cut)
            .exclude(lease_owner="")
            .values_list("lease_owner", flat=True)
        }
        time.sleep(max(0.0, 3 * LEASE - (time.monotonic() - frozen_at)))  # cut off for three leases
    finally:
        reconnect(celery, victim)
    thawed_at = clock.now()
    cut_for = time.monotonic() - frozen_at
    wait_for_all(run_ids, timeout=180)
    sender.join(timeout=60)
    wait_until(
        lambda: all(stale_lines(celery, victim, run_id) for run_id in cut),
        timeout=30,
        interval=0.2,
        message=f"{victim.name} to try recording its stale attempts",
    )
    refused = [
        line.split("] ", 1)[-1] for run_id in cut for line in stale_lines(celery, victim, run_id)
    ]

    runs = {run.id: run for run in WorkflowRun.objects.filter(pk__in=run_ids)}
    journal: dict[str, list[int]] = {}
    for run_id, position in JournalEntry.objects.filter(run_id__in=run_ids).values_list(
        "run_id", "position"
    ):
        journal.setdefault(run_id, []).append(position)
    recorded_by = {
        (run_id, position): host
        for run_id, position, host in JournalEntry.objects.filter(
            run_id__in=run_ids, position__in=(ARRIVE, BOOK, SHIP)
        ).values_list("run_id", "position", "result")
    }
    effects = Counter(Effect.objects.filter(run_id__in=run_ids).values_list("run_id", "name"))
    booked_by = dict(
        Effect.objects.filter(run_id__in=run_ids, name="book").values_list("run_id", "worker")
    )
    recorded = Counter(recorded_by.values())
    positions = Counter(length for _, length in cut.values())
    duplicates = sum(
        effects[(run_id, name)] - 1 for run_id in run_ids for name in ("arrive", "ship")
    )
    print(
        f"\n[faults] hosts: arrivals {dict(sorted(arrivals.items()))}, steps recorded "
        f"{dict(sorted(recorded.items()))}; {victim.name} cut off for {cut_for:.1f} s holding "
        f"{len(cut)} runs (journal lengths {dict(positions)}); taken over after "
        f"{min(taken_over.values()):.2f}-{max(taken_over.values()):.2f} s "
        f"(lease {LEASE} s + two ticks = {LEASE + 2 * TICK} s); "
        f"external effects repeated {duplicates}; after the thaw "
        f"{victim.name} logged: {refused}"
    )

    assert sender.error is None, f"sending a signal failed: {sender.error!r}"
    assert max(taken_over.values()) <= LEASE + 2 * TICK + SLACK
    assert victim not in new_holders, "a frozen host's run was claimed by the frozen host"
    for run_id, run in runs.items():
        assert run.status == RunStatus.COMPLETED, f"{run_id} did not complete"
        n = int(run_id.split(":")[1])
        assert run.result == {
            "n": n,
            "token": f"t-{run_id}",
            "hosts": [recorded_by[(run_id, p)] for p in (ARRIVE, BOOK, SHIP)],
        }
        assert sorted(journal[run_id]) == [ARRIVE, SIGNAL, BOOK, SHIP], (
            f"{run_id}: its journal has a gap"
        )
        assert effects[(run_id, "book")] == 1, (
            f"{run_id}: the atomic effect did not happen exactly once"
        )
        assert booked_by[run_id] == recorded_by[(run_id, BOOK)], (
            f"{run_id}: the atomic effect that stayed is not the attempt the journal recorded"
        )
        assert 1 <= effects[(run_id, "arrive")] <= 2 and 1 <= effects[(run_id, "ship")] <= 2
    for run_id, (_, length) in cut.items():
        if length in (BOOK, SHIP):
            assert recorded_by[(run_id, length)] != victim.name, (
                f"{run_id}: the journal recorded the cut-off host's stale attempt"
            )
    signals = Counter(
        Signal.objects.filter(run_id__in=run_ids, name="go").values_list("run_id", flat=True)
    )
    assert signals == Counter(run_ids), (
        "a redelivered signal became two signals, or a signal was lost"
    )
    assert JournalEntry.objects.filter(run_id__in=run_ids, kind=EntryKind.SIGNAL).count() == RUNS
    assert all(celery.procs[name].poll() is None for name in victim.processes), (
        "the thawed host's worker exited"
    )
    assert JournalEntry.objects.filter(
        run_id__in=run_ids, created_at__gt=thawed_at, result=victim.name
    ).exists(), "the host that came back took no work again"
