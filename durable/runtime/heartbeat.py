"""The heartbeat: one thread per process that keeps the leases of long steps alive.

The lease itself, and every statement it guards, is ``durable.runtime.store.live``.
"""

import logging
import threading
import time
from contextlib import contextmanager

from django.db import connection

from durable import conf
from durable.runtime.store.live import LiveStore, first_line

log = logging.getLogger(__name__)


class Heartbeat:
    """One daemon thread per process that extends the leases of long-running steps.

    It serves every advance of its process (one under the prefork pool, up to
    ``--concurrency`` under the threads pool) on one database connection of its own. It
    writes only for an advance that has held or extended its lease for a third of its
    length: fast steps never cause a heartbeat query. A run row locked by another
    transaction is passed over until the next tick rather than waited for, so one held
    row cannot let every other lease of the process expire. A step past its timeout is
    not kept: its lease runs out and another worker records the attempt as timed out.
    """

    IDLE_EXIT_SECONDS = 60.0

    def __init__(self):
        self._leases: dict[int, tuple[LiveStore, float]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def hold(self, lease: LiveStore):
        if not conf.heartbeat_enabled():
            yield lease
            return
        with self._lock:
            self._leases[id(lease)] = (lease, time.monotonic())
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._loop, name="durable-heartbeat", daemon=True
                )
                self._thread.start()
        try:
            yield lease
        finally:
            with self._lock:
                self._leases.pop(id(lease), None)

    def _held(self, key: int) -> bool:
        with self._lock:
            return key in self._leases

    def _loop(self):
        idle_since = time.monotonic()
        timed_out: set[int] = set()
        try:
            while True:
                with self._lock:
                    held = list(self._leases.items())
                    if not held and time.monotonic() - idle_since > self.IDLE_EXIT_SECONDS:
                        self._thread = None
                        return
                if held:
                    idle_since = time.monotonic()
                for key, (lease, last) in held:
                    if time.monotonic() - last < lease.seconds / 3:
                        continue
                    if lease.step_deadline is not None and time.monotonic() >= lease.step_deadline:
                        if key not in timed_out:
                            timed_out.add(key)
                            log.warning(
                                "run %s: a step ran past its timeout; its lease is left to expire",
                                lease.run_id,
                            )
                        continue
                    try:
                        alive = lease.extend(wait=False)
                    except Exception as exc:
                        log.warning("run %s: heartbeat failed: %s", lease.run_id, first_line(exc))
                        connection.close()  # a fresh one next time
                        continue
                    if alive is None:  # its row is locked by a transaction: next tick
                        continue
                    if not alive and not lease.done and self._held(key):
                        log.warning("run %s: lease lost while a step was running", lease.run_id)
                    with self._lock:
                        if key in self._leases:
                            self._leases[key] = (lease, time.monotonic())
                timed_out &= {key for key, _ in held}
                time.sleep(0.2)
        finally:
            connection.close()


heartbeat = Heartbeat()
