"""``workflow``: the decorator that registers a workflow and the calls its body makes.

Outside a running workflow the calls raise ``NotInWorkflow``: a step cannot be journaled
without a run.
"""

import functools

from durable.errors import Cancelled, ChildFailed, NotInWorkflow
from durable.runtime import context, registry


def _ctx() -> context.ReplayContext:
    ctx = context.current()
    if ctx is None:
        raise NotInWorkflow("this call is only valid inside a running workflow")
    return ctx


class WorkflowAPI:
    Cancelled = Cancelled
    ChildFailed = ChildFailed

    def __call__(
        self,
        fn=None,
        *,
        name: str | None = None,
        version: int = 1,
        lease_seconds: float | None = None,
        queue: str | None = None,
    ):
        """``@workflow`` or ``@workflow(name="onboarding", version=2)``; ``queue`` is the
        Celery queue its advances go to (``celery -A config worker -Q <queue>`` takes them)."""

        def register(func):
            definition = registry.WorkflowDefinition(
                name=name or func.__name__,
                version=version,
                fn=func,
                lease_seconds=lease_seconds,
                queue=queue or None,
            )
            registry.register(definition)

            @functools.wraps(func)
            def wrapper(*args, **kwargs):
                return func(*args, **kwargs)

            wrapper.durable_definition = definition
            return wrapper

        return register(fn) if fn is not None else register

    @property
    def id(self) -> str:
        return _ctx().run.id

    def step(
        self,
        fn,
        *args,
        idempotency_key=None,
        name=None,
        retry=None,
        atomic=False,
        timeout=None,
        queue=None,
        limit=None,
        priority=None,
        **kwargs,
    ):
        """Run ``fn`` once and journal its result; on replay return the result without calling it.

        ``atomic=True`` runs ``fn`` in the transaction that records its journal entry, so its
        writes to our database happen exactly once. ``timeout`` bounds one attempt: past it
        the attempt fails with ``StepTimeout`` (and follows ``retry``), even if its worker
        hung on a call that never returns. ``queue`` runs it on that Celery queue (the run is
        handed there, and back for the next step); ``limit`` (a name declared with
        ``durable.limit``, or ``(name, key)``) makes it wait its turn, durably, when the
        limit is reached; ``priority`` (0..9, default the run's) is its place in that line.
        """
        return _ctx().step(
            fn,
            *args,
            idempotency_key=idempotency_key,
            name=name,
            retry=retry,
            atomic=atomic,
            timeout=timeout,
            queue=queue,
            limit=limit,
            priority=priority,
            **kwargs,
        )

    def wait_for_signal(self, name: str, timeout=None, type=None):
        """The oldest unconsumed signal ``name``'s payload, or None once ``timeout`` passes."""
        return _ctx().wait_for_signal(name, timeout=timeout, type=type)

    def wait_for_any(self, names, timeout=None, type=None):
        """The oldest unconsumed signal among ``names`` as ``Received(name, payload)``, or None
        once ``timeout`` passes. Signals of other names stay buffered."""
        return _ctx().wait_for_any(names, timeout=timeout, type=type)

    def collect_signals(self, name: str, *, quiet, timeout=None, type=None):
        """The signals ``name`` a sender sent together: waits for the first (None at
        ``timeout``), then takes more until none has arrived for ``quiet``; a list."""
        return _ctx().collect_signals(name, quiet=quiet, timeout=timeout, type=type)

    def drain_signals(self, name: str, type=None) -> list:
        """Every signal ``name`` buffered right now (oldest first, consumed); never waits."""
        return _ctx().drain_signals(name, type=type)

    def start_child(self, workflow, *args, id: str | None = None, **kwargs):
        """Start ``workflow`` as a child run; returns a ``ChildHandle`` to wait on.

        Journaled and idempotent on the child's id (default ``<parent id>:child:<position>``):
        a replay or a crash never starts it twice. Cancelling the parent cancels the child.
        """
        return _ctx().start_child(workflow, args, kwargs, id=id)

    def wait_for_child(self, handle, timeout=None):
        """The child's result; ``ChildFailed`` (its error's type and message) if it failed or
        was cancelled; None once ``timeout`` passes."""
        return _ctx().wait_for_child(handle, timeout=timeout)

    def wait_for_children(self, handles, timeout=None) -> list:
        """Fan-in: the children's results in order, under one ``timeout`` (None in place of
        each child not finished by then); the first failed child raises ``ChildFailed``."""
        return _ctx().wait_for_children(list(handles), timeout=timeout)

    def sleep(self, duration) -> None:
        return _ctx().sleep(duration)

    def now(self):
        return _ctx().now()

    def uuid4(self):
        return _ctx().uuid4()

    def random(self) -> float:
        return _ctx().random()

    def patched(self, change_id: str) -> bool:
        """True for runs that reach this point with the new code, False for older journals."""
        return _ctx().patched(change_id)

    def continue_as_new(self, *args, **kwargs):
        """End this run (status ``continued``) and start a new run of the same workflow with
        these arguments and an empty journal, in the same transaction: a loop that runs for
        years replays a short journal. Signals not taken yet go to the new run; signals,
        queries and cancels sent to any run of the chain reach the newest."""
        return _ctx().continue_as_new(args, kwargs)

    def on_update(self, name: str, handler, *, validator=None) -> None:
        """Let ``services.run_update(run_id, name, payload)`` change this run:
        ``validator(payload)`` runs on the caller's side first (raise
        ``durable.UpdateRejected(reason)`` to refuse, nothing stored); ``handler(payload)`` runs
        here at the next durable call or while the body waits, journaled like a step (it may call
        ``workflow.step``), and its return value is the update's result. Not journaled itself."""
        return _ctx().on_update(name, handler, validator)

    def on_query(self, name: str, handler) -> None:
        """Let ``services.run_query(run_id, name, *args)`` read this run's state: it replays
        the run from its journal (nothing runs, nothing is written) and returns
        ``handler(*args)`` as the body left it at the run's position. Not journaled."""
        return _ctx().on_query(name, handler)

    def deprecate_patch(self, change_id: str) -> None:
        """Once no run that took the old branch is left: replace ``if workflow.patched(id):``
        with this call and keep only the new branch. It records nothing; runs that recorded
        the patch marker step over it, so they and newer runs both replay."""
        return _ctx().deprecate_patch(change_id)

    def set_attributes(self, **attributes) -> None:
        """Set search attributes on the run (JSON scalars; set again, the latest wins).

        Journaled, so replay does not write them again; ``stage`` is the human status
        operators see. ``GET /api/runs/?attr.<name>=`` and the admin filter on them.
        """
        return _ctx().set_attributes(attributes)


workflow = WorkflowAPI()
