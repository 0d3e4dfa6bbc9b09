"""Child runs: starting one for a parent, and telling the parent when it finishes.

A child's outcome reaches its parent as a signal (name ``durable.child:<id>``, a dedupe
key reserved for the engine), written in the transaction that finishes the child: the
parent never misses it, and a redelivered finish cannot tell it twice.
"""
import hashlib

from durable import registry
from durable.errors import RunConflict, RunFinished, RunNotFound, SignalConflict
from durable.models import WorkflowRun
from durable.services import run_start, signal_replace_untaken, signal_send
from durable.store import live

SIGNAL_PREFIX = "durable.child:"
DEDUPE_PREFIX = "durable:child:"
OWNER = "durable"


def _bounded(prefix: str, child_id: str) -> str:
    """``prefix + child_id`` within the 255 characters a signal's name and key may hold."""
    text = prefix + child_id
    if len(text) <= 255:
        return text
    return f"{prefix}{child_id[:180]}~{hashlib.sha256(child_id.encode()).hexdigest()[:32]}"


def signal_name(child_id: str) -> str:
    return _bounded(SIGNAL_PREFIX, child_id)


def reserve() -> None:
    """Only the engine writes children's outcomes (called from the app's ready())."""
    registry.reserve_dedupe_prefix(DEDUPE_PREFIX, owner=OWNER)


def start(parent_id: str, definition, args, kwargs, child_id: str) -> WorkflowRun:
    """Start ``child_id`` for the parent in the caller's transaction, or adopt it.

    The id is the idempotency key: a run that exists with the same workflow and input is
    this child (adopted if it has no parent yet; if it already finished, its outcome is
    sent to the parent now). A run of another parent, workflow or input is a RunConflict.
    """
    child = run_start(definition, *args, id=child_id, parent=parent_id,
                      actor=f"run:{parent_id}", audit={"parent": parent_id}, **kwargs)
    if child.parent_id == parent_id:
        return child
    if child.parent_id is not None:
        raise RunConflict(f"run {child_id!r} is already a child of {child.parent_id!r}; "
                          f"refusing to make it a child of {parent_id!r} too")
    if not live.adopt_child(child_id, parent_id):
        raise RunConflict(f"run {child_id!r} was just made the child of another run")
    child.parent_id = parent_id
    child.refresh_from_db(fields=["status", "result", "error"])
    if child.is_finished:
        notify_parent(child, status=child.status, result=child.result, error=child.error)
    return child


def notify_parent(child: WorkflowRun, *, status: str, result, error) -> None:
    """Send the child's outcome to its parent, in the caller's transaction. A parent that
    finished or is gone needs nothing: the child's own row keeps the outcome."""
    if not child.parent_id:
        return
    outcome = {"id": child.id, "status": status, "result": result, "error": error}
    key, actor, audit = _bounded(DEDUPE_PREFIX, child.id), f"run:{child.id}", {"child": child.id, "status": status}
    try:
        signal_send(child.parent_id, signal_name(child.id), outcome, dedupe_key=key, reserved_by=OWNER,
                    actor=actor, audit=audit)
    except SignalConflict:
        # The parent was told an earlier outcome (the child failed, and was retried since):
        # one it has not read yet becomes this one; one it read stands, it acted on it.
        signal_replace_untaken(child.parent_id, key, outcome, actor=actor, audit=audit)
    except (RunFinished, RunNotFound):
        pass
