"""Logging filters of the project's own (the engine's are in durable/runtime/logging.py)."""

import logging
import re


class RefusedInOneLine(logging.Filter):
    """A 403 is an answer the app meant to give (a reviewer outside a case's groups, a
    signed-in user without the permission): one line with the path, not the traceback of
    the ``PermissionDenied`` that produced it, which says nothing an operator can act on
    and buried the real errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", None) == 403:
            record.exc_info, record.exc_text = None, None
        return True


# Query parameters whose value is a secret: Meta's webhook verification sends the verify
# token in the URL (processes/api.py), so every log line that shows a URL would carry it.
SECRET_PARAMETERS = re.compile(r"(hub(?:\.|%2e)verify_token=)[^&\s\"#]*", re.IGNORECASE)


def scrub(text: str) -> str:
    """``text`` with the value of every secret query parameter replaced by ``***``."""
    return SECRET_PARAMETERS.sub(r"\1***", text)


class SecretsScrubbed(logging.Filter):
    """Takes secrets out of a record's message before any handler writes it: on the console
    handler (every record the app logs), runserver's request lines and gunicorn's access
    and error logs (config/access_log.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not fit: logging reports it, not us
            return True
        scrubbed = scrub(message)
        if scrubbed != message:
            record.msg, record.args = scrubbed, ()
        return True


class CountdownsStayOnTheWorker(logging.Filter):
    """On quorum queues (``CELERY_QUEUE_TYPE=quorum``) Celery warns at every countdown it sends
    to a direct exchange that native delayed delivery cannot carry it. The engine means it:
    its countdowns, under one sweep tick, are held by the worker, as on classic queues
    (config/consumer.py). One warning per timer would bury the ones that matter."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Direct exchanges are not supported")
