"""Workflows measured by the benchmarks: trivial steps, so the engine's cost is what shows."""

from durable import workflow


def noop(i: int) -> int:
    return i


@workflow(name="bench_steps")
def bench_steps(k: int) -> int:
    for i in range(k):
        workflow.step(noop, i)
    return k


@workflow(name="bench_signal")
def bench_signal() -> int:
    workflow.wait_for_signal("go")
    return workflow.step(noop, 1)


@workflow(name="bench_timer")
def bench_timer(seconds_to_sleep: float) -> int:
    workflow.sleep(seconds_to_sleep)
    return workflow.step(noop, 1)


@workflow(name="bench_idle")
def bench_idle() -> None:
    workflow.wait_for_signal("never", timeout=7 * 24 * 3600)
