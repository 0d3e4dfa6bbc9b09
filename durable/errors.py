"""Named errors of the engine: the API and views turn them into 4xx with the message intact."""


class DurableError(Exception):
    """Base class of every error the engine raises on purpose."""


class RunNotFound(DurableError):
    pass


class RunFinished(DurableError):
    """The run has ended (completed, failed or cancelled) and takes no more signals."""


class RunConflict(DurableError):
    """A run with this id exists with a different workflow or input."""


class SignalConflict(DurableError):
    """A dedupe key already names another signal of this run (other name or payload), or
    belongs to a prefix another app reserved: refused, never taken as a redelivery."""


class InvalidTransition(DurableError):
    """The run's status does not allow the requested operation."""


class InvalidFork(DurableError):
    """The run cannot be forked at this position (past its journal, in the middle of a wait,
    after it started a child run): nothing was created."""


class UpdateRejected(DurableError):
    """An update's validator refused it (or there is no handler for it): nothing was stored."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


class UpdateNotFound(UpdateRejected):
    """The run's body registered no update handler of this name by the run's position."""


class UpdateFailed(DurableError):
    """The update was applied and its handler raised: the workflow goes on, the update failed.
    ``error_type`` and ``reason`` are the handler's exception (a handler that refuses after
    looking under a lock raises with the reason a caller shows)."""

    def __init__(self, message: str, error_type: str = "", reason: str = ""):
        self.error_type, self.reason = error_type, reason
        super().__init__(message)


class UpdateTimeout(DurableError):
    """The caller stopped waiting: the update is stored and the run will still apply it."""

    def __init__(self, message: str, update_id: str):
        self.update_id = update_id
        super().__init__(message)


class QueryNotFound(DurableError):
    """The run's body registered no query of this name by the run's position."""


class QueryFailed(DurableError):
    """A query could not be answered: its handler raised, or the run no longer replays on
    the code deployed now (it diverges, or its body reads the database)."""


class WorkflowNotFound(DurableError):
    pass


class NotInWorkflow(DurableError):
    """A workflow-only call (``workflow.step`` ...) was made outside a running workflow."""


class PayloadError(DurableError):
    """A value cannot be stored in the journal (not JSON-encodable)."""


class PayloadTooDeep(PayloadError):
    """A value nests deeper than DURABLE_API_MAX_PAYLOAD_DEPTH: the codec and replay recurse."""


class TokenRefused(DurableError):
    """An API token that is unknown, revoked or past its expiry: the request is not
    authenticated."""


class TokenNotFound(DurableError):
    """No API token has this id."""


class StepFailed(Exception):
    """A step exhausted its retries; raised into the workflow body, which may catch it.

    Carries the original error's type name and message, not the exception object: the
    body sees the same value live and on replay.
    """

    def __init__(self, step_name: str, error_type: str, message: str, attempts: int):
        self.step_name = step_name
        self.error_type = error_type
        self.message = message
        self.attempts = attempts
        super().__init__(
            f"step {step_name!r} failed after {attempts} attempt(s): {error_type}: {message}"
        )


class Cancelled(Exception):
    """The run is being cancelled: raised from the durable call the body is paused in.

    The body may catch it, run cleanup steps and return (or re-raise); the run ends
    ``cancelled`` either way. A body may also raise it to end itself as cancelled.
    """

    def __init__(self, reason: str = "", actor: str = ""):
        self.reason = reason
        self.actor = actor
        super().__init__(reason or "cancelled")


class ChildFailed(Exception):
    """A child run failed or was cancelled; raised into the parent by ``wait_for_child``.

    Like ``StepFailed`` it carries the child's error type and message, not an exception
    object, so the parent sees the same value live and on replay.
    """

    def __init__(self, child_id: str, error_type: str, message: str, status: str = "failed"):
        self.child_id = child_id
        self.error_type = error_type
        self.message = message
        self.status = status
        super().__init__(f"child run {child_id!r} {status}: {error_type}: {message}")


class StepTimeout(Exception):
    """A step attempt ran longer than its ``timeout``: the attempt counts as failed."""


class ControlFlow(BaseException):
    """Unwinds the workflow body; a BaseException so ``except Exception`` cannot swallow it."""


class Suspend(ControlFlow):
    """The body reached a wait that cannot be satisfied yet (at journal ``position``)."""

    def __init__(self, wake_at, waiting_for: str, position: int | None = None):
        self.wake_at = wake_at
        self.waiting_for = waiting_for
        self.position = position
        super().__init__(waiting_for)


class Divergence(ControlFlow):
    """The run cannot go on with this code: it is blocked with ``message`` for an operator."""

    error_type = "JournalMismatch"

    def __init__(self, message: str):
        self.message = message
        super().__init__(message)


class JournalMismatch(Divergence):
    """The code asked for ``found`` where the journal recorded ``expected`` (an entry, or
    None when the code went on past the journal's end)."""

    def __init__(self, position: int, found: str, expected=None, message: str | None = None):
        self.position = position
        self.found = found
        self.expected = expected
        recorded = f"{expected.kind} {expected.name!r}" if expected is not None else "nothing more"
        super().__init__(
            message
            or f"journal mismatch at position {position}: the code asks for "
            f"{found} but the journal recorded {recorded}"
        )


class CrashLoop(Divergence):
    """A call's worker died every time it reached it: run no more until an operator acts."""

    error_type = "CrashLoop"


class ContinueAsNew(ControlFlow):
    """The body called ``workflow.continue_as_new``: end this run, start its successor."""

    def __init__(self, args: tuple, kwargs: dict):
        self.args_, self.kwargs = args, kwargs
        super().__init__("continue as new")


class Fenced(ControlFlow):
    """This worker lost its lease: another worker owns the run, nothing more may be written."""


class StoreUnavailable(ControlFlow):
    """The engine's own database write failed (connection lost, failover).

    The advance stops where it is and keeps nothing half-done: the run keeps its lease
    until it expires, then the sweep hands it to a worker with a working connection.
    It never fails the run: an outage is not the workflow's fault.
    """


class Handoff(ControlFlow):
    """The next step runs on another Celery queue: the run is released and sent there."""

    def __init__(self, queue: str, position: int):
        self.queue = queue
        self.position = position
        super().__init__(f"queue:{queue}")


class LimitNotFound(Divergence):
    """A step names a limit no code declared (``durable.limit``): blocked until a deploy
    declares it, then retried."""

    error_type = "LimitNotFound"


class RunArchived(RunConflict):
    """The id belongs to a run ``durable archive`` moved out: starting it again would run the
    process a second time, so the start is refused (the archived run is still readable)."""
