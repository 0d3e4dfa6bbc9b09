"""A logging filter that stamps every record with the run id and journal position.

Wired in settings.LOGGING, so it is imported while Django configures logging, before
the app registry is ready: the replay context (which imports models) is looked up
lazily, and a record logged outside any run reads ``run_id=-``, ``position=-``.
"""
import logging

_context = None


def _context_module():
    global _context
    if _context is None:
        try:
            from durable import context
        except Exception:  # apps not ready yet: nothing can be running a workflow
            return None
        _context = context
    return _context


class RunContextFilter(logging.Filter):
    """Adds ``run_id`` and ``position`` (of the running step, else the replay cursor)."""

    def filter(self, record: logging.LogRecord) -> bool:
        run_id = position = "-"
        context = _context_module()
        if context is not None:
            step = context.current_step()
            if step is not None:
                run_id, position = step.run_id, step.position
            else:
                replay = context.current()
                if replay is not None:
                    run_id, position = replay.run.id, replay.position
        if not hasattr(record, "run_id"):
            record.run_id = run_id
        if not hasattr(record, "position"):
            record.position = position
        return True
