"""The example's workflow: a step, then a wait for a reviewer's signal with a timeout."""

from durable import hours, workflow


def compose_greeting(name: str) -> str:
    return f"Hello, {name}"


@workflow(name="greeting", version=1)
def greeting(name: str) -> str:
    text = workflow.step(compose_greeting, name)
    decision = workflow.wait_for_signal("approved", timeout=hours(24))
    if decision is None:
        return "expired"
    return f"{text}! (approved by {decision['reviewer']})"
