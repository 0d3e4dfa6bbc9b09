"""A logging filter that stamps every record with the run id and journal position.

Wired in settings.LOGGING, so it is imported while Django configures logging, before
the app registry is ready: it reads only ``durable.runtime.current`` (no models), and a
record logged outside any run reads ``run_id=-``, ``position=-``.
"""

import logging

from durable.runtime import current


class RunContextFilter(logging.Filter):
    """Adds ``run_id`` and ``position`` (of the running step, else the replay cursor)."""

    def filter(self, record: logging.LogRecord) -> bool:
        run_id = position = "-"
        step = current.current_step()
        if step is not None:
            run_id, position = step.run_id, step.position
        else:
            replay = current.current()
            if replay is not None:
                run_id, position = replay.run.id, replay.position
        if not hasattr(record, "run_id"):
            record.run_id = run_id
        if not hasattr(record, "position"):
            record.position = position
        return True
