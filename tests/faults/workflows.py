"""The workflow every fault test runs: external effects, an effect on our own database,
a timer and a signal, with steps slow enough for a kill to land in the middle of one."""

import os
import signal
import time
from pathlib import Path

from celery import current_task

from durable import Retry, current_step, limit, minutes, seconds, workflow
from tests.effects.models import Effect, Once

# Infrastructure faults surface as step errors too (a terminated connection): be patient.
PATIENT = Retry(
    max_attempts=30, initial_interval=seconds(0.2), backoff=1.5, max_interval=seconds(2)
)


def worker_node() -> str:
    """The Celery node running this step ("" when driven in-process)."""
    request = current_task.request if current_task else None
    return getattr(request, "hostname", None) or ""


def charge(n: int, idempotency_key: str) -> str:
    """External: the payment provider dedupes by key, so it may run twice, never more."""
    Effect.objects.create(
        run_id=f"fault:{n}", name="charge", idempotency_key=idempotency_key, worker=worker_node()
    )
    time.sleep(0.1)
    return idempotency_key


def post_ledger(n: int, idempotency_key: str) -> int:
    """Ours: an atomic step, so the row commits with its journal entry, exactly once."""
    return Effect.objects.create(
        run_id=f"fault:{n}", name="ledger", idempotency_key=idempotency_key
    ).pk


def notify(n: int, token: str, idempotency_key: str) -> str:
    time.sleep(0.15)
    Effect.objects.create(
        run_id=f"fault:{n}", name="notify", idempotency_key=idempotency_key, worker=worker_node()
    )
    return token


@workflow(name="fault_order")
def fault_order(n: int) -> dict:
    workflow.step(charge, n, idempotency_key=f"{workflow.id}:charge", retry=PATIENT)
    workflow.step(
        post_ledger, n, idempotency_key=f"{workflow.id}:ledger", atomic=True, retry=PATIENT
    )
    workflow.sleep(seconds(0.5 + (n % 4) * 0.25))
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    token = workflow.step(
        notify, n, go["token"], idempotency_key=f"{workflow.id}:notify", retry=PATIENT
    )
    return {"n": n, "token": token}


# --- single steps under a fault: each leaves a marker file per attempt, so the test knows
# when a worker is inside the step (FAULT_MARKERS is a folder the test chose). ---


def _mark(kind: str, n: int) -> int:
    """Write a marker for this attempt and return how many attempts came before it."""
    folder = Path(os.environ["FAULT_MARKERS"])
    before = len(list(folder.glob(f"{kind}-{n}-*")))
    (folder / f"{kind}-{n}-{os.getpid()}-{time.monotonic_ns()}").touch()
    return before


def hold_in_transaction(n: int, idempotency_key: str) -> str:
    """Atomic: takes a unique row, then lingers inside the transaction (the first time)."""
    Once.objects.create(key=idempotency_key)
    if _mark("atomic", n) == 0:
        time.sleep(1.5)  # under the 2 s lease, which is also the idle-in-transaction limit
    return idempotency_key


def linger(n: int, idempotency_key: str) -> str:
    """Plain: an external effect, then a pause long enough to be frozen in (the first time)."""
    Effect.objects.create(
        run_id=f"frozen:{n}", name="linger", idempotency_key=idempotency_key, worker=worker_node()
    )
    if _mark("plain", n) == 0:
        time.sleep(2.0)
    return idempotency_key


@workflow(name="fault_frozen")
def fault_frozen(n: int, atomic: bool) -> str:
    step = hold_in_transaction if atomic else linger
    workflow.step(step, n, idempotency_key=f"{workflow.id}:held", atomic=atomic)
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    return go["token"]


def slow_ledger(n: int, blips: int, idempotency_key: str) -> int:
    """Atomic and slow for its first ``blips`` attempts, so the test can cut its connection."""
    if _mark("blip", n) < blips:
        time.sleep(1.5)
    return Once.objects.create(key=idempotency_key).pk


@workflow(name="fault_blips")
def fault_blips(n: int, blips: int) -> int:
    return workflow.step(
        slow_ledger, n, blips, idempotency_key=f"{workflow.id}:ledger", atomic=True
    )


def send_then_pause(n: int, idempotency_key: str) -> str:
    """External: the effect, then a pause in which the test cuts the connection, so the
    journal write after it finds the connection dead."""
    Effect.objects.create(
        run_id=f"blip:{n}", name="send", idempotency_key=idempotency_key, worker=worker_node()
    )
    _mark("send", n)
    time.sleep(1.0)
    return idempotency_key


@workflow(name="fault_lost_write")
def fault_lost_write(n: int) -> str:
    return workflow.step(send_then_pause, n, idempotency_key=f"{workflow.id}:send")


def kill_my_worker(n: int) -> None:
    """Dies like a segfault or the OOM killer: nothing after this line runs."""
    _mark("crash", n)
    os.kill(os.getpid(), signal.SIGKILL)


@workflow(name="fault_crash_loop")
def fault_crash_loop(n: int) -> str:
    workflow.step(kill_my_worker, n)
    return "unreachable"


def hang(n: int, seconds_: float) -> str:
    """The first attempt hangs (a call that never returns in time); later ones are quick."""
    if _mark("hang", n) == 0:
        time.sleep(seconds_)
    return f"attempt-{os.getpid()}"


@workflow(name="fault_timeout")
def fault_timeout(n: int, hang_for: float) -> str:
    return workflow.step(
        hang,
        n,
        hang_for,
        timeout=seconds(1),
        retry=Retry(max_attempts=3, initial_interval=seconds(0.1)),
    )


# --- several hosts (tests/faults/test_hosts.py): each worker is told its host in FAULT_HOST
# and every step returns it, so the journal says whose attempt was recorded. ---


def this_host() -> str:
    return os.environ.get("FAULT_HOST", "")


def arrive(n: int, idempotency_key: str) -> str:
    Effect.objects.create(
        run_id=f"hosts:{n}", name="arrive", idempotency_key=idempotency_key, worker=this_host()
    )
    return this_host()


def book(n: int, idempotency_key: str) -> str:
    """Ours, atomic: the row commits with the journal entry, so it exists once whoever ran it,
    and a cut lands inside the transaction often enough to matter."""
    Effect.objects.create(
        run_id=f"hosts:{n}", name="book", idempotency_key=idempotency_key, worker=this_host()
    )
    time.sleep(0.2)
    return this_host()


def ship(n: int, idempotency_key: str) -> str:
    """External: at least once, at most twice across one takeover."""
    Effect.objects.create(
        run_id=f"hosts:{n}", name="ship", idempotency_key=idempotency_key, worker=this_host()
    )
    time.sleep(0.2)
    return this_host()


@workflow(name="fault_hosts")
def fault_hosts(n: int) -> dict:
    arrived = workflow.step(arrive, n, idempotency_key=f"{workflow.id}:arrive", retry=PATIENT)
    go = workflow.wait_for_signal("go", timeout=minutes(10))
    booked = workflow.step(
        book, n, idempotency_key=f"{workflow.id}:book", atomic=True, retry=PATIENT
    )
    shipped = workflow.step(ship, n, idempotency_key=f"{workflow.id}:ship", retry=PATIENT)
    return {"n": n, "token": go["token"], "hosts": [arrived, booked, shipped]}


def pause(n: int) -> int:
    time.sleep(0.1)
    return n


@workflow(name="fault_backlog")
def fault_backlog(n: int) -> int:
    """One short step: a few thousand of these queued are the default queue's backlog."""
    return workflow.step(pause, n)


# A provider's send limit, as onboarding's "whatsapp-send": a backlog of runs lines up behind it.
BACKLOG_SENDS = limit("fault-backlog-sends", rate=20, per=seconds(1))


def send(n: int) -> int:
    """The limited call: its row's time is when the provider would have seen it."""
    info = current_step()
    Effect.objects.create(
        run_id=info.run_id, name="send", idempotency_key=info.idempotency_key, worker=worker_node()
    )
    return n


@workflow(name="fault_limited_send")
def fault_limited_send(n: int) -> int:
    return workflow.step(send, n, limit="fault-backlog-sends")
