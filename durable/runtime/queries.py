"""Queries, and updates' validators: a run's state read by replaying its body from the
journal, writing nothing.

The body registers handlers with ``workflow.on_query``; a query replays the journal through
the recorded store (no step runs, no value is drawn, no statement reaches the database)
up to where the run is, and calls the handler there, with the body's variables as the run
left them. The answer is the state the journal proves, never a copy kept elsewhere.
"""

from durable.documents import History, RecordedEntry, RecordedRun, entry_json
from durable.errors import Divergence, QueryFailed, QueryNotFound, UpdateNotFound, UpdateRejected
from durable.runtime import registry
from durable.runtime.context import Diverged, ReplayContext, replay
from durable.runtime.store.recorded import HistoryEnds, RecordedStore, without_database

_ENTRY_FIELDS = set(RecordedEntry.__dataclass_fields__)


def replayed(run, journal: list, *, refused) -> ReplayContext:
    """The replay context of ``run`` replayed from ``journal`` (its live entries) up to where
    the run is, with nothing run and nothing written; ``refused(message)`` is raised when the
    run does not replay on the code deployed now. The caller reads what the body registered
    (``ctx.queries``, ``ctx.updates``) inside ``without_database()``."""
    try:
        definition = registry.get(run.workflow_name, run.workflow_version)
        fn_args, fn_kwargs = definition.decode_input(run.input)
    except Exception as exc:  # its code is gone, or no longer reads this run's input
        raise refused(
            f"run {run.id!r} cannot be replayed on the code deployed now: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    history = History(
        run=RecordedRun(
            id=run.id,
            workflow_name=run.workflow_name,
            workflow_version=run.workflow_version,
            input=run.input,
            status=run.status,
            result=run.result,
            error=run.error,
        ),
        journal={
            entry.position: RecordedEntry(
                **{key: value for key, value in entry_json(entry).items() if key in _ENTRY_FIELDS}
            )
            for entry in journal
        },
    )
    store = RecordedStore(history)
    ctx = ReplayContext(history.run, store, store.load())
    try:
        outcome = replay(ctx, definition.fn, fn_args, fn_kwargs)
    except HistoryEnds:
        outcome = None  # the run is here: what follows is not done yet
    if isinstance(outcome, Diverged):
        raise refused(
            f"run {run.id!r} does not replay on the code deployed now (at position "
            f"{ctx.position}: {outcome.divergence.message})"
        )
    return ctx


def answer(run, journal: list, name: str, args: tuple):
    """``handler(*args)`` of the query ``name`` the body of ``run`` registered by its position
    in ``journal`` (its live entries). QueryNotFound if it registered none by then; QueryFailed
    if the handler raised or the run no longer replays on this code."""
    with without_database():
        ctx = replayed(run, journal, refused=QueryFailed)
        handler = ctx.queries.get(name)
        if handler is None:
            raise QueryNotFound(
                f"run {run.id!r} registered no query {name!r} by position {ctx.position} "
                f"(registered: {_names(ctx.queries)})"
            )
        try:
            return handler(*args)
        except (Exception, Divergence) as exc:  # a Divergence: the handler read the database
            raise QueryFailed(
                f"query {name!r} of run {run.id!r} raised {type(exc).__name__}: {exc}"
            ) from exc


def validate_update(run, journal: list, name: str, payload) -> None:
    """Run the validator of update ``name`` that the body of ``run`` registered by its
    position, against ``payload``: UpdateNotFound if there is no such update there,
    UpdateRejected with the validator's reason (any error it raises is a refusal)."""
    with without_database():
        ctx = replayed(run, journal, refused=UpdateRejected)
        registered = ctx.updates.get(name)
        if registered is None:
            raise UpdateNotFound(
                f"run {run.id!r} takes no update {name!r} at position {ctx.position} "
                f"(it takes: {_names(ctx.updates)})"
            )
        validator = registered[1]
        if validator is None:
            return
        try:
            validator(payload)
        except UpdateRejected:
            raise
        except (Exception, Divergence) as exc:
            raise UpdateRejected(f"{type(exc).__name__}: {exc}") from exc


def _names(handlers: dict) -> str:
    return ", ".join(repr(name) for name in sorted(handlers)) or "none"
