"""Concurrency and rate limits shared by every worker: declared in code, counted in the database.

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
  newcomer queues behind the waiting. A waiter that is not back within
  ``DURABLE_LIMIT_PATIENCE_SECONDS`` (60) of its wake-up (its run cancelled, or stuck
  elsewhere) loses its place.
- A holder that frees a concurrency slot wakes the next waiters at once; waiters for a
  rate wake when the window has room (the sweep fires their timer).
"""
import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Count, F, Q

from durable import clock, conf, sql
from durable.dispatch import dispatch
from durable.durations import as_timedelta
from durable.errors import LimitNotFound
from durable.locks import advisory_xact_lock
from durable.models import ACTIVE_STATUSES, LimitTicket, RunStatus, TicketState

# pg_advisory_xact_lock(class, object): the class keeps our locks apart from anyone else's.
ADVISORY_LOCK_CLASS = 0x64757261  # "dura"
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


def limit(name: str, *, rate: int | None = None, per=None, concurrency: int | None = None,
          replace: bool = False) -> Limit:
    """Declare a limit every worker enforces: ``rate`` calls per ``per`` (default one second)
    and/or ``concurrency`` steps at once. Declaring it again with other numbers is an error
    (two modules disagree), unless ``replace`` (tests)."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME:
        raise ValueError(f"a limit needs a name of at most {MAX_NAME} characters, not {name!r}")
    for label, value in (("rate", rate), ("concurrency", concurrency)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"limit {name!r}: {label} must be a positive integer, not {value!r}")
    if rate is None and concurrency is None:
        raise ValueError(f"limit {name!r} needs a rate (rate=20, per=seconds(1)), a concurrency "
                         "(concurrency=4), or both")
    if per is not None and rate is None:
        raise ValueError(f"limit {name!r}: per= only goes with rate=")
    window = as_timedelta(per) if per is not None else timedelta(seconds=1)
    if rate is not None and window <= timedelta(0):
        raise ValueError(f"limit {name!r}: per must be a positive duration, not {per!r}")
    declared = Limit(name=name, rate=rate, per=window if rate is not None else None,
                     concurrency=concurrency)
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
        raise LimitNotFound(f"no limit named {name!r} is declared: call durable.limit({name!r}, ...) "
                            "in a module every worker imports, then retry the run")
    key = "" if key is None else str(key)
    if len(key) > MAX_KEY:
        raise ValueError(f"limit {name!r}: a key is at most {MAX_KEY} characters")
    return found, key


# --- the statements (a Lease calls them while it holds the run) ---


def acquire(lease, declared: Limit, key: str, position: int, queue: str) -> datetime | None:
    """Take a slot or token for the step at ``position``: None when taken, else the time to
    come back (the caller's run waits until then, or until a holder wakes it)."""
    now = clock.now()
    with transaction.atomic():
        _lock(declared.name, key)
        lease._fence()  # a worker that lost the run takes nothing
        tickets = LimitTicket.objects.filter(limit_name=declared.name, limit_key=key)
        _forget_dead(tickets, declared, now)
        waiting = _mine(lease.run_id, position, declared, key, now)
        measures = {"holding": Count("id", filter=_live_hold(now)),
                    "ahead": Count("id", filter=_waiting_ahead(waiting, now))}
        if declared.rate is not None:
            measures["in_window"] = Count("id", filter=_in_window(declared, now))
        counts = tickets.aggregate(**measures)
        free = _free(declared, counts)
        if counts["ahead"] < free:
            ticket = waiting or LimitTicket(limit_name=declared.name, limit_key=key, run_id=lease.run_id,
                                            position=position, queued_at=now)
            ticket.state, ticket.fencing_token, ticket.queue = TicketState.HELD, lease.token, queue
            ticket.granted_at, ticket.released_at, ticket.wake_at = now, None, None
            ticket.save()
            return None
        wake_at = _next_chance(declared, tickets, counts, now)
        if waiting is None:
            LimitTicket.objects.create(limit_name=declared.name, limit_key=key, run_id=lease.run_id,
                                       position=position, state=TicketState.WAITING, queue=queue,
                                       queued_at=now, wake_at=wake_at)
        else:
            waiting.wake_at, waiting.queue = wake_at, queue
            waiting.save(update_fields=["wake_at", "queue"])
        return wake_at


def release(lease, declared: Limit, key: str, position: int) -> None:
    """The step at ``position`` ended: its ticket stops holding a slot (and, for a rate,
    counts until ``per`` from now). Freeing a slot wakes the next waiters in line."""
    now = clock.now()
    mine = LimitTicket.objects.filter(run_id=lease.run_id, position=position, state=TicketState.HELD,
                                      fencing_token=lease.token)
    if declared.concurrency is None:  # nobody waits for this to happen: one statement
        mine.update(state=TicketState.RELEASED, released_at=now)
        return
    with transaction.atomic():
        _lock(declared.name, key)  # an acquirer sees our release, or we see its waiting ticket
        if declared.rate is None:  # it counts for nothing once released: no row left behind per key
            mine.delete()
        else:
            mine.update(state=TicketState.RELEASED, released_at=now)
        _wake_next(declared, key, now)


def _lock(name: str, key: str) -> None:
    """Serialise the limit's acquirers and releasers until commit."""
    advisory_xact_lock(ADVISORY_LOCK_CLASS, name, key)


def _live_run(now) -> Q:
    """The ticket's run is still running under the lease that took it."""
    return Q(run__status=RunStatus.RUNNING, run__fencing_token=F("fencing_token"),
             run__lease_expires_at__gt=now)


def _live_hold(now) -> Q:
    return Q(state=TicketState.HELD) & _live_run(now)


def _in_window(declared: Limit, now) -> Q:
    start = now - declared.per
    return (Q(state=TicketState.RELEASED, released_at__gt=start)
            | Q(state=TicketState.HELD, granted_at__gt=start) | _live_hold(now))


def _waiting_live(now) -> Q:
    patience = timedelta(seconds=conf.limit_patience_seconds())
    return Q(state=TicketState.WAITING, run__status__in=ACTIVE_STATUSES, wake_at__gt=now - patience)


def _waiting_ahead(waiting: LimitTicket | None, now) -> Q:
    if waiting is None:
        return _waiting_live(now)
    earlier = Q(queued_at__lt=waiting.queued_at) | Q(queued_at=waiting.queued_at, id__lt=waiting.id)
    return _waiting_live(now) & earlier


def _forget_dead(tickets, declared: Limit, now) -> None:
    """Tickets that no longer count: released past the window, held by a lease that is gone,
    waiting for a run that ended or never came back."""
    patience = timedelta(seconds=conf.limit_patience_seconds())
    cutoff = now - declared.window
    dead = (Q(state=TicketState.RELEASED, released_at__lte=cutoff)
            | (Q(state=TicketState.HELD, granted_at__lte=cutoff) & ~_live_run(now))
            | Q(state=TicketState.WAITING, wake_at__lte=now - patience)
            | (Q(state=TicketState.WAITING) & ~Q(run__status__in=ACTIVE_STATUSES)))
    tickets.filter(dead).delete()


def _mine(run_id: str, position: int, declared: Limit, key: str, now) -> LimitTicket | None:
    """This step's waiting ticket, if it has one. A ticket it still holds is an earlier
    attempt's, whose worker is gone: it may have acted up to now, so it counts as released now."""
    waiting = None
    for ticket in LimitTicket.objects.filter(run_id=run_id, position=position,
                                             state__in=[TicketState.WAITING, TicketState.HELD]):
        if ticket.state == TicketState.HELD:
            ticket.state, ticket.released_at = TicketState.RELEASED, now
            ticket.save(update_fields=["state", "released_at"])
        elif ticket.limit_name == declared.name and ticket.limit_key == key:
            waiting = ticket
        else:  # the code now names another limit at this step
            ticket.delete()
    return waiting


def _free(declared: Limit, counts: dict) -> int:
    room = []
    if declared.concurrency is not None:
        room.append(declared.concurrency - counts["holding"])
    if declared.rate is not None:
        room.append(declared.rate - counts["in_window"])
    return min(room)


def _next_chance(declared: Limit, tickets, counts: dict, now) -> datetime:
    """When a ticket with ``ahead`` waiters before it may find room: for a rate, when enough
    tickets leave the window; for concurrency, a lease's length (a holder that ends sooner
    wakes it; one whose worker died frees its slot by then)."""
    chances = [now + timedelta(seconds=1)]
    if declared.concurrency is not None and counts["holding"] + counts["ahead"] >= declared.concurrency:
        chances.append(now + timedelta(seconds=conf.lease_seconds()))
    if declared.rate is not None and counts["in_window"] + counts["ahead"] >= declared.rate:
        ends = sorted(
            released_at + declared.per if state == TicketState.RELEASED and released_at else now + declared.per
            for state, released_at in tickets.filter(_in_window(declared, now)).values_list("state", "released_at"))
        needed = counts["ahead"] + 1 - (declared.rate - counts["in_window"])
        if needed <= len(ends):
            chances.append(ends[needed - 1])
        else:
            last = ends[-1] if ends else now
            chances.append(last + declared.per * math.ceil((needed - len(ends)) / declared.rate))
    return max(chances)


def _wake_next(declared: Limit, key: str, now) -> None:
    """Wake the first waiters that the free slots let through; bumping signal_seq makes a
    waiter that is parking right now look again (see Lease.finish), so no wake-up is lost."""
    tickets = LimitTicket.objects.filter(limit_name=declared.name, limit_key=key)
    free = declared.concurrency - tickets.filter(_live_hold(now)).count()
    if free <= 0:
        return
    chosen = list(tickets.filter(_waiting_live(now)).order_by("queued_at", "id")
                  .values_list("id", "run_id", "queue")[:free])
    if not chosen:
        return
    LimitTicket.objects.filter(id__in=[ticket_id for ticket_id, _, _ in chosen]).update(wake_at=now)
    grace = now + timedelta(seconds=conf.dispatch_grace_seconds())
    sql.wake_runs([run_id for _, run_id, _ in chosen], now=now, by=grace)
    for _, run_id, queue in chosen:
        dispatch(run_id, queue=queue or None)
