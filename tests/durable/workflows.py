"""Workflows used by the engine's tests; also imported by worker subprocesses."""

import os
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import timedelta

from durable import Retry, StepFailed, clock, current_step, days, seconds, workflow
from durable.testing import drive, fake_clock
from tests.effects.models import Effect, Once

CALLS: Counter = Counter()


def effect(name: str) -> None:
    """Count a step's body in memory and in the effects table (which survives a SIGKILL)."""
    CALLS[name] += 1
    info = current_step()
    Effect.objects.create(
        run_id=info.run_id if info else "",
        name=name,
        idempotency_key=info.idempotency_key if info else "",
    )


def add_one(x: int) -> int:
    effect("add_one")
    return x + 1


def record(name: str) -> str:
    effect(name)
    return name


@dataclass
class Validation:
    ok: bool
    missing: list[str] = field(default_factory=list)


def validate(kinds: list[str]) -> Validation:
    effect("validate")
    required = ["articles", "address", "selfie"]
    return Validation(
        ok=all(k in kinds for k in required), missing=[k for k in required if k not in kinds]
    )


@workflow(name="three_steps")
def three_steps(x: int) -> int:
    a = workflow.step(add_one, x)
    b = workflow.step(add_one, a)
    return workflow.step(add_one, b)


@workflow(name="step_wait_step")
def step_wait_step() -> list:
    first = workflow.step(record, "before")
    go = workflow.wait_for_signal("go")
    second = workflow.step(record, "after")
    return [first, go["value"], second]


@workflow(name="collect_two")
def collect_two() -> list:
    return [workflow.wait_for_signal("item")["n"], workflow.wait_for_signal("item")["n"]]


@workflow(name="wait_with_deadline")
def wait_with_deadline() -> str:
    docs = workflow.wait_for_signal("documents_received", timeout=days(7))
    if docs is None:
        workflow.step(record, "close_case")
        return "expired"
    return "received"


@workflow(name="nap")
def nap() -> str:
    workflow.sleep(seconds(3600))
    return workflow.step(record, "woke")


class Flaky(Exception):
    pass


def always_fails() -> None:
    effect("always_fails")
    raise Flaky("the provider is down")


@workflow(name="gives_up")
def gives_up() -> str:
    try:
        workflow.step(
            always_fails, retry=Retry(max_attempts=3, initial_interval=seconds(10), backoff=2)
        )
    except StepFailed as failure:
        return f"gave up after {failure.attempts}: {failure.error_type}: {failure.message}"
    return "unreachable"


class Crash(BaseException):
    """Stands in for the process dying in the middle of a step."""


def crashes_once() -> str:
    effect("crashes_once")
    if CALLS["crashes_once"] == 1:
        raise Crash()
    return "done"


@workflow(name="crash_in_middle")
def crash_in_middle() -> list:
    return [
        workflow.step(record, "first"),
        workflow.step(crashes_once),
        workflow.step(record, "last"),
    ]


def slow_effect() -> str:
    """Records its effect, then takes long enough to be killed."""
    effect("slow_effect")
    delay = float(os.environ.get("SLOW_STEP_SECONDS", "0"))
    if (
        delay
        and Effect.objects.filter(name="slow_effect", run_id=current_step().run_id).count() == 1
    ):
        time.sleep(delay)
    return "slow done"


@workflow(name="killed_mid_step")
def killed_mid_step() -> list:
    return [
        workflow.step(record, "first"),
        workflow.step(slow_effect),
        workflow.step(record, "last"),
    ]


def create_once(key: str, idempotency_key: str) -> int:
    """An effect on our own database, exactly once when run as an atomic step."""
    effect("create_once")
    return Once.objects.create(key=idempotency_key).pk


@workflow(name="deterministic_values")
def deterministic_values() -> dict:
    return {"now": workflow.now(), "uuid": workflow.uuid4(), "random": workflow.random()}


@workflow(name="fails_in_body")
def fails_in_body() -> None:
    workflow.step(record, "before")
    raise KeyError("missing")


def noop(i: int) -> int:
    return i


@workflow(name="n_steps")
def n_steps(n: int) -> int:
    for i in range(n):
        workflow.step(noop, i)
    return n


@workflow(name="short_nap")
def short_nap() -> str:
    workflow.sleep(seconds(2))
    return workflow.step(record, "woke")


def slow_step(seconds_to_take: float) -> str:
    effect("slow_step")
    time.sleep(seconds_to_take)
    return "slow"


@workflow(name="one_slow_step")
def one_slow_step(seconds_to_take: float) -> str:
    return workflow.step(slow_step, seconds_to_take)


# Two orders of the same calls: swapping one for the other between advances is a deploy
# that reorders steps (not registered: tests install them with override_workflow).
def a_then_b():
    workflow.step(record, "a", name="a")
    workflow.wait_for_signal("go")
    workflow.step(record, "b", name="b")
    return "done"


def b_then_a():
    workflow.step(record, "b", name="b")
    workflow.wait_for_signal("go")
    workflow.step(record, "a", name="a")
    return "done"


@workflow(name="value_across_a_wait")
def value_across_a_wait(kind: str):
    """Take one deterministic value (``now``, ``uuid4`` or ``random``), then wait: the
    value is returned after a replay, so a regenerated value shows in the result."""
    value = getattr(workflow, kind)()
    workflow.wait_for_signal("go")
    return value


def write_then_crash(idempotency_key: str) -> int:
    """Writes to our database, then dies on the first call before its entry is recorded."""
    effect("write_then_crash")
    pk = Once.objects.create(key=idempotency_key).pk
    if CALLS["write_then_crash"] == 1:
        raise Crash()
    return pk


@workflow(name="atomic_crash")
def atomic_crash() -> int:
    return workflow.step(write_then_crash, atomic=True)


def write_then_fail(idempotency_key: str) -> int:
    """Writes to our database, then raises (a retryable error) on the first call."""
    effect("write_then_fail")
    pk = Once.objects.create(key=idempotency_key).pk
    if CALLS["write_then_fail"] == 1:
        raise Flaky("the provider is down")
    return pk


@workflow(name="atomic_retry")
def atomic_retry() -> int:
    return workflow.step(
        write_then_fail, atomic=True, retry=Retry(max_attempts=2, initial_interval=seconds(5))
    )


@workflow(name="atomic_write")
def atomic_write() -> int:
    return workflow.step(create_once, "account", atomic=True)


# --- waits on several signals, batches, and graceful cancel ---


@workflow(name="paid_or_voided")
def paid_or_voided() -> dict | None:
    got = workflow.wait_for_any(["paid", "voided"], timeout=days(3))
    if got is None:
        return None
    return {"name": got.name, "amount": got.payload.amount}


@workflow(name="drain_then_wait")
def drain_then_wait() -> dict:
    early = workflow.drain_signals("item")
    later = workflow.wait_for_signal("item", timeout=days(1))
    return {"early": [p["n"] for p in early], "later": later["n"] if later else None}


@workflow(name="two_batches")
def two_batches() -> list:
    batches = []
    for _ in range(2):
        batch = workflow.collect_signals("doc", quiet=seconds(30), timeout=days(7))
        batches.append(None if batch is None else [p["n"] for p in batch])
    return batches


def say_goodbye(customer: str, idempotency_key: str) -> str:
    Once.objects.create(key=idempotency_key)
    effect("goodbye")
    return customer


@workflow(name="polite_cancel")
def polite_cancel(customer: str) -> str:
    try:
        workflow.wait_for_signal("documents", timeout=days(7))
        workflow.step(record, "after_documents")
        return "done"
    except workflow.Cancelled as cancelled:
        workflow.step(say_goodbye, customer, idempotency_key=f"{workflow.id}:bye")
        workflow.sleep(seconds(0))
        return f"bye: {cancelled.reason} ({cancelled.actor})"


@workflow(name="slow_cleanup")
def slow_cleanup() -> str:
    try:
        workflow.wait_for_signal("never", timeout=days(7))
    except workflow.Cancelled:
        workflow.sleep(days(1))  # longer than the cleanup may take
        workflow.step(record, "never_reached")
    return "unreachable"


@workflow(name="withdraws")
def withdraws() -> str:
    reply = workflow.wait_for_signal("reply", timeout=days(7))
    if reply["text"].strip().lower() == "cancelar":
        raise workflow.Cancelled("customer withdrew")
    return "stays"


@workflow(name="quick_batches")
def quick_batches() -> list:
    batches = []
    for _ in range(2):
        batch = workflow.collect_signals("doc", quiet=seconds(1.5), timeout=days(1))
        batches.append([p["n"] for p in batch])
    return batches


def goodbye_that_dies_once(customer: str, idempotency_key: str) -> str:
    """Atomic cleanup: the first attempt kills its worker after its write (which rolls back)."""
    Once.objects.create(key=idempotency_key)
    marker = os.path.join(os.environ["CLEANUP_MARKERS"], idempotency_key.replace(":", "_"))
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), 9)
    return customer


@workflow(name="cleanup_survives_a_kill")
def cleanup_survives_a_kill(customer: str) -> str:
    try:
        workflow.wait_for_signal("documents", timeout=days(7))
        return "done"
    except workflow.Cancelled:
        workflow.step(
            goodbye_that_dies_once, customer, idempotency_key=f"{workflow.id}:bye", atomic=True
        )
        raise


@workflow(name="staged")
def staged(cnpj: str) -> str:
    workflow.set_attributes(cnpj=cnpj, stage="awaiting documents")
    documents = workflow.wait_for_signal("documents", timeout=days(7))
    workflow.set_attributes(stage="in review")
    return documents["kind"]


@workflow(name="cleanup_then_reraise")
def cleanup_then_reraise() -> str:
    try:
        workflow.wait_for_signal("never", timeout=days(7))
        return "unreachable"
    except workflow.Cancelled:
        workflow.step(record, "cleanup")
        raise


def another_worker_tries_the_run(seconds_later: float) -> str:
    """Stands in for a second worker trying the run while this step is still running."""
    effect("another_worker_tries_the_run")
    if CALLS["another_worker_tries_the_run"] > 1:
        return "ran twice"
    with fake_clock(clock.now() + timedelta(seconds=seconds_later)):
        return drive(current_step().run_id, owner="another-worker").status


@workflow(name="long_lease", lease_seconds=60)
def long_lease() -> str:
    return workflow.step(another_worker_tries_the_run, 30)


def broken_cleanup() -> None:
    raise ValueError("the goodbye could not be sent")


@workflow(name="cleanup_fails")
def cleanup_fails() -> str:
    try:
        workflow.wait_for_signal("never", timeout=days(7))
        return "unreachable"
    except workflow.Cancelled:
        workflow.step(broken_cleanup, retry=Retry(max_attempts=1))
        return "unreachable"


@workflow(name="cleanup_after_a_nap")
def cleanup_after_a_nap() -> str:
    try:
        workflow.wait_for_signal("never", timeout=days(7))
        return "unreachable"
    except workflow.Cancelled as cancelled:
        workflow.sleep(seconds(1))  # the next advance replays the delivered cancel
        return f"{cancelled.reason} / {cancelled.actor}"


# --- child runs (tests/durable/test_children.py) ---


@dataclass
class Correction:
    entry: str
    amount: int


def correct(entry: str, amount: int) -> Correction:
    effect(f"correct:{entry}")
    if amount < 0:
        raise ValueError(f"entry {entry} cannot be corrected by {amount}")
    return Correction(entry, amount)


@workflow(name="correction")
def correction(entry: str, amount: int) -> Correction:
    return workflow.step(correct, entry, amount, retry=Retry(max_attempts=1))


@workflow(name="awaits_approval")
def awaits_approval(entry: str) -> str:
    decision = workflow.wait_for_signal("decision", timeout=days(3))
    return f"{entry}: {decision}"


@workflow(name="reconcile_disputes")
def reconcile_disputes(disputes: list) -> list:
    handles = [workflow.start_child(correction, entry, amount) for entry, amount in disputes]
    try:
        results = workflow.wait_for_children(handles, timeout=days(1))
    except workflow.ChildFailed as failed:
        return [f"failed: {failed.child_id}: {failed.error_type}: {failed.message}"]
    return [None if r is None else f"{r.entry}={r.amount}" for r in results]


@workflow(name="one_child")
def one_child(entry: str, child_id: str = "") -> str:
    handle = workflow.start_child(awaits_approval, entry, id=child_id or None)
    result = workflow.wait_for_child(handle, timeout=days(5))
    return "no decision in time" if result is None else result


@workflow(name="parent_cleans_up")
def parent_cleans_up(entry: str) -> str:
    handle = workflow.start_child(awaits_approval, entry)
    try:
        return workflow.wait_for_child(handle, timeout=days(5))
    except workflow.ChildFailed as failed:
        workflow.step(record, "parent_saw_child_cancelled")
        return f"child {failed.status}"
    except workflow.Cancelled:
        workflow.step(record, "parent_cleanup")
        return "parent cancelled"


LEDGER_UNLOCKED = "ledger-unlocked"  # an Effect of this name is the fix a test deploys


def correct_once_unlocked() -> str:
    if not Effect.objects.filter(name=LEDGER_UNLOCKED).exists():
        raise ValueError("the ledger is locked")
    return "corrected"


@workflow(name="fixable_child")
def fixable_child() -> str:
    return workflow.step(correct_once_unlocked, retry=Retry(max_attempts=1))


@workflow(name="waits_for_fixable_child")
def waits_for_fixable_child() -> str:
    handle = workflow.start_child(fixable_child)
    try:
        return workflow.wait_for_child(handle)
    except workflow.ChildFailed as failed:
        return f"child {failed.status}"


def book_correction_once(entry: str, idempotency_key: str) -> int:
    """An atomic effect that a worker killed after it would repeat: unique on its key."""
    time.sleep(0.05)
    return Once.objects.create(key=f"booked:{entry}").pk


@workflow(name="booked_correction")
def booked_correction(entry: str) -> str:
    workflow.step(book_correction_once, entry, atomic=True)
    workflow.sleep(seconds(0.2))
    return entry


@workflow(name="fan_out_bookings")
def fan_out_bookings(count: int) -> list:
    handles = [workflow.start_child(booked_correction, f"e{n}") for n in range(count)]
    return workflow.wait_for_children(handles, timeout=days(1))


def wait_on_io(n: int, seconds_to_wait: float) -> int:
    """Stands for an HTTP call or a model's answer: the thread waits, the CPU does not."""
    effect("wait_on_io")
    time.sleep(seconds_to_wait)
    return n


@workflow(name="io_bound")
def io_bound(n: int, seconds_to_wait: float) -> int:
    return workflow.step(wait_on_io, n, seconds_to_wait)


def book_once(n: int, seconds_to_wait: float, idempotency_key: str) -> int:
    """Atomic: the effect row and the unique booking commit with the journal entry, or neither."""
    effect("book_once")
    Once.objects.create(key=idempotency_key)
    time.sleep(seconds_to_wait)
    return n


@workflow(name="io_bound_atomic")
def io_bound_atomic(n: int, seconds_to_wait: float) -> int:
    return workflow.step(book_once, n, seconds_to_wait, atomic=True)


@workflow(name="counting_loop")
def counting_loop(n: int, total: int) -> int:
    """Adds n, then continues as new until n reaches 3: a loop whose journal stays short."""
    total = workflow.step(add_n, total, n)
    if n >= 3:
        return total
    workflow.continue_as_new(n + 1, total)


def add_n(total: int, n: int) -> int:
    effect("add_n")
    return total + n


def slow_due_date(due: str, idempotency_key: str) -> str:
    """The update's step: recorded when it starts (an Effect survives a SIGKILL), then slow."""
    effect("due_date_started")
    time.sleep(float(os.environ.get("SLOW_UPDATE_SECONDS", "0")))
    return due


@workflow(name="updated_on_workers")
def updated_on_workers() -> dict:
    state = {"due": "2027-01-10"}

    def change_due(payload):
        state["due"] = workflow.step(slow_due_date, payload["due"])
        return dict(state)

    workflow.on_update("change_due_date", change_due)
    workflow.wait_for_signal("done", timeout=days(7))
    return state
