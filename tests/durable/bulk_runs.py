"""Runs for the bulk operation tests: blocked runs of a given version, made by a deploy that
reorders steps."""

from durable import services, workflow
from durable.testing import drive, override_workflow
from tests.durable.workflows import record


def a_then_b():
    workflow.step(record, "a", name="a")
    workflow.wait_for_signal("go")
    return "done"


def b_then_a():
    workflow.step(record, "b", name="b")
    workflow.wait_for_signal("go")
    return "done"


def blocked_runs(*run_ids: str, version: int = 1) -> list[str]:
    """Runs of ``reorder`` v``version`` that a deploy reordering their steps blocked."""
    with override_workflow(a_then_b, name="reorder", version=version):
        for run_id in run_ids:
            drive(services.run_start("reorder", id=run_id, actor="test").id)
    for run_id in run_ids:
        services.signal_send(run_id, "go", {}, actor="test")
    with override_workflow(b_then_a, name="reorder", version=version):
        for run_id in run_ids:
            drive(run_id)
    return list(run_ids)
