"""Sending "advance run X" once the caller's transaction commits.

The message is only a hint: a lost one delays the run until the sweep finds its
``wake_at`` due, it never loses the run. Where it goes is ``DURABLE_DISPATCHER``: the
dotted path of a ``send(run_id, *, delay, queue=None)`` callable, or one of the short names
below. ``queue`` is passed only when the advance must go to a queue other than the default
(``durable.conf.default_queue``), so a sender written before queues existed still works for
runs that use none.

The default queue's lane, ``conf.takeover_queue()``, which the default workers consume
beside it, carries what must not wait behind its backlog: a takeover (the sweep found a run
whose lease expired) and a waiter whose turn at a limit has come (a token or a freed slot
waits for it). It is used only through a sender that says it knows the lane (an attribute
``takeover_lane = True``, as ``tasks.send_advance`` and the tests' recorder have): it is
passed as ``queue``, and such a sender also takes ``advances``. Any other sender gets such
a run as the plain advance it always got. A sender with ``priorities = True`` also takes the
run's ``priority`` (0..9, higher first), for the broker to serve higher first, on every
message but the lane's. A sender with ``background = True`` (``tasks.send_advance``) is
called on this process's publisher thread (publisher.py): the caller's call ends at its
commit, not at the broker's answer.
"""

import functools

from django.db import transaction
from django.utils.module_loading import import_string

from durable import conf
from durable.runtime import tracing
from durable.runtime.publisher import publisher

SHORT_NAMES = {
    "celery": "durable.tasks.send_advance",
    "inline": "durable.runtime.inline.advance_inline",  # one process, no broker
    # tests: nothing is sent, durable.testing.dispatched says what
    "none": "durable.testing.record_dispatch",
}


def dispatch(
    run_id: str,
    *,
    delay: float = 0.0,
    queue: str | None = None,
    lane: bool = False,
    advances: int | None = None,
    priority: int | None = None,
) -> None:
    """Send "advance run X" after commit; ``delay`` (under one sweep tick) for timers,
    ``queue`` for a run whose next step runs on a queue of its own, ``lane`` for a run that
    goes ahead of the default queue's backlog (a takeover, a waiter whose turn has come); a
    run bound for another queue goes there all the same. ``advances`` (the sweep's): the
    run's count of advances now, so a copy that arrives after the run moved on is dropped
    (``store.live.claim``); only through a sender that says it knows it."""
    send = _sender(conf.dispatcher())
    if queue == conf.default_queue():
        queue = None
    modern = getattr(send, "takeover_lane", False)
    if lane and not queue and modern:
        queue = conf.takeover_queue()
    options = {"delay": delay}
    if queue:
        options["queue"] = queue
    if advances is not None and modern:
        options["advances"] = advances
    # The lane's messages go without one: on Redis a priority files a message behind every
    # message sent without one, and the lane is there to go ahead of the backlog.
    if priority is not None and not lane and getattr(send, "priorities", False):
        options["priority"] = priority
    # The caller's span (a signal sent, a run started) has ended by the commit: the message
    # is sent in its trace all the same, so the advance it causes is its child.
    call = tracing.carried(lambda: send(run_id, **options))
    if getattr(send, "background", False):
        transaction.on_commit(lambda: publisher.submit(call), robust=True)
    else:
        transaction.on_commit(call, robust=True)


@functools.lru_cache(maxsize=8)
def _sender(path: str):
    try:
        return import_string(SHORT_NAMES.get(path, path))
    except ImportError as exc:
        raise ValueError(
            f"DURABLE_DISPATCHER {path!r} is neither {' nor '.join(map(repr, SHORT_NAMES))} "
            f"nor the dotted path of a send(run_id, *, delay, queue=None) function"
        ) from exc
