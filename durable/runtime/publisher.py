"""The advance messages of a web process, sent by a thread of its own after the commit.

A caller of ``signal_send`` or ``run_start`` (a webhook, a reviewer's decision) then waits for
PostgreSQL only, not for the broker after it: its call ends at its commit, and this process's
publisher thread sends the message at once (a cold publish took 1.2-1.4 ms of a 3.4 ms call).

Why a thread and not an outbox table drained on PostgreSQL's ``LISTEN``: a listener needs a
session of its own, which a transaction pooler (PgBouncer, docs/operations.md) does not
keep; an outbox row is one more write and WAL flush per signal, and its dispatcher one more
hop and one more process to run. The message is only a hint (dispatch.py): one lost because
the process died between its commit and the send delays the run until the sweep sends it
again after ``DURABLE_DISPATCH_GRACE_SECONDS``, as one the broker refused always has. At a
normal exit (a deploy's restart) ``atexit`` sends what is left, for up to 5 s.

Celery workers send in line (``in_line``, set as a worker starts): a task's follow-ups are
sent before the task is acknowledged, and a pool process may end without ``atexit``.
"""

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class Publisher:
    def __init__(self):
        self.in_line = False
        self._reset()

    def _reset(self) -> None:
        """Empty and threadless: a forked child sends only its own messages (its parent's
        thread, which it does not inherit, sends the parent's)."""
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, send: Callable[[], None]) -> None:
        """``send`` now on the publisher thread (in line in a worker)."""
        if self.in_line:
            send()
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._drain, args=(self._queue,), name="durable-publisher", daemon=True
                )
                self._thread.start()
        self._queue.put(send)

    @staticmethod
    def _drain(messages: queue.Queue) -> None:
        while True:
            send = messages.get()
            try:
                send()
            except Exception:  # a sender that raised: the sweep sends it again
                log.warning("an advance message was not sent; the sweep will", exc_info=True)
            finally:
                messages.task_done()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every message submitted is sent (True), or ``timeout`` seconds (False):
        ``Queue.join`` with a timeout, which the queue itself does not offer."""
        done = self._queue.all_tasks_done
        with done:
            return done.wait_for(lambda: not self._queue.unfinished_tasks, timeout)


publisher = Publisher()
atexit.register(publisher.flush)
os.register_at_fork(after_in_child=publisher._reset)
