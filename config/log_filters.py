"""Logging filters of the project's own (the engine's are in durable/runtime/logging.py)."""
import logging


class RefusedInOneLine(logging.Filter):
    """A 403 is an answer the app meant to give (a reviewer outside a case's groups, a
    signed-in user without the permission): one line with the path, not the traceback of
    the ``PermissionDenied`` that produced it, which says nothing an operator can act on
    and buried the real errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info, record.exc_text = None, None
        return True
