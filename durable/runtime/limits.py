"""Concurrency and rate limits shared by every worker: declared in code (here), counted in
the database (the tickets of ``durable.runtime.store.live``).

``limit("llm", concurrency=4)`` or ``limit("whatsapp-send", rate=20, per=seconds(1))``
declares one (at import, as workflows are registered); ``workflow.step(..., limit="llm")``,
or ``limit=("per-company", company_id)`` for a separate count per key, applies it. Nothing
is counted in a process: a step takes a ticket (``LimitTicket``) in one short transaction
under the limit's lock (a PostgreSQL advisory lock per limit and key; SQLite's write lock,
which serialises every writer), and a step that cannot go now leaves its run waiting on a
durable timer, in line.

- A held ticket counts while its run is running under the ticket's fencing token with an
  unexpired lease: a killed worker's slot frees itself when its lease runs out.
- For a rate, a ticket counts from its grant until ``per`` after the step ended, so the
  calls a step makes never exceed ``rate`` in any window of ``per``, however long the step.
- Order: a slot or token goes to the ticket that has waited longest (per limit and key); a
  newcomer queues behind the waiting. A waiter keeps its place while its run could not
  come back for it (still parked on the limit, its message queued behind a backlog); one
  that could and did not within ``DURABLE_LIMIT_PATIENCE_SECONDS`` (60) of its wake-up or
  of its run's last claim (its run ended, or moved on elsewhere) loses it.
- A holder that frees a concurrency slot wakes the next waiters at once; waiters for a
  rate wake when the window has room (the sweep fires their timer). Either way the woken
  run goes on the default queue's lane, ahead of its backlog (``durable.runtime.dispatch``): a
  token or a slot that waits for its run behind other work is capacity the limit loses.
"""

from dataclasses import dataclass
from datetime import timedelta

from durable.durations import as_timedelta
from durable.errors import LimitNotFound

MAX_NAME = 100
MAX_KEY = 255


@dataclass(frozen=True)
class Limit:
    name: str
    rate: int | None = None
    per: timedelta | None = None
    concurrency: int | None = None

    @property
    def window(self) -> timedelta:
        """How long after its step ended a ticket still counts."""
        return self.per if self.rate else timedelta(0)


_limits: dict[str, Limit] = {}


def limit(
    name: str,
    *,
    rate: int | None = None,
    per=None,
    concurrency: int | None = None,
    replace: bool = False,
) -> Limit:
    """Declare a limit every worker enforces: ``rate`` calls per ``per`` (default one second)
    and/or ``concurrency`` steps at once. Declaring it again with other numbers is an error
    (two modules disagree), unless ``replace`` (tests)."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise ValueError(f"a limit needs a name of at most {MAX_NAME} characters, not {name!r}")
    for label, value in (("rate", rate), ("concurrency", concurrency)):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or value < 1
        ):
            raise ValueError(f"limit {name!r}: {label} must be a positive integer, not {value!r}")
    if rate is None and concurrency is None:
        raise ValueError(
            f"limit {name!r} needs a rate (rate=20, per=seconds(1)), a concurrency "
            "(concurrency=4), or both"
        )
    if per is not None and rate is None:
        raise ValueError(f"limit {name!r}: per= only goes with rate=")
    window = as_timedelta(per) if per is not None else timedelta(seconds=1)
    if rate is not None and window <= timedelta(0):
        raise ValueError(f"limit {name!r}: per must be a positive duration, not {per!r}")
    declared = Limit(
        name=name, rate=rate, per=window if rate is not None else None, concurrency=concurrency
    )
    existing = _limits.get(name)
    if existing is not None and existing != declared and not replace:
        raise ValueError(f"limit {name!r} is already declared as {existing}; refusing {declared}")
    _limits[name] = declared
    return declared


def undeclare(name: str) -> None:
    _limits.pop(name, None)


def declared() -> list[Limit]:
    return sorted(_limits.values(), key=lambda declared_limit: declared_limit.name)


def resolve(spec) -> tuple[Limit, str]:
    """``"llm"``, ``("per-company", 42)`` or a ``Limit`` -> (the declared limit, its key)."""
    name, key = spec if isinstance(spec, tuple) and len(spec) == 2 else (spec, "")
    if isinstance(name, Limit):
        name = name.name
    if not isinstance(name, str):
        raise TypeError(f"limit= takes a declared limit's name or (name, key), not {spec!r}")
    found = _limits.get(name)
    if found is None:
        raise LimitNotFound(
            f"no limit named {name!r} is declared: call durable.limit({name!r}, ...) "
            "in a module every worker imports, then retry the run"
        )
    key = "" if key is None else str(key)
    if len(key) > MAX_KEY:
        raise ValueError(f"limit {name!r}: a key is at most {MAX_KEY} characters")
    return found, key
