"""The engine's settings, read at call time so tests can override them.

Every setting is ``DURABLE_*``; a few are also read under the name they had before the
engine was a package of its own (``METRICS_TOKEN``, ``API_TOKEN_DAYS``, ``VAR_DIR``,
``BASE_DIR``), when the ``DURABLE_`` name is not set.
"""

import hashlib
import hmac
from pathlib import Path

from django.conf import settings


def _setting(name: str, *, legacy: str, default):
    """``name`` if the project sets it, else ``legacy``, else ``default``."""
    if hasattr(settings, name):
        return getattr(settings, name)
    return getattr(settings, legacy, default)


def lease_seconds() -> float:
    return float(getattr(settings, "DURABLE_LEASE_SECONDS", 15))


def dispatch_grace_seconds() -> float:
    return float(getattr(settings, "DURABLE_DISPATCH_GRACE_SECONDS", 10))


def dispatcher() -> str:
    return getattr(settings, "DURABLE_DISPATCHER", "celery")


def sweep_batch() -> int:
    return int(getattr(settings, "DURABLE_SWEEP_BATCH", 500))


def heartbeat_enabled() -> bool:
    return bool(getattr(settings, "DURABLE_HEARTBEAT", True))


def workflow_modules() -> list[str]:
    return list(getattr(settings, "DURABLE_WORKFLOW_MODULES", []))


def sweep_lookahead_seconds() -> float:
    """Timers due within this many seconds are sent now, with a countdown (one tick)."""
    return float(
        getattr(
            settings,
            "DURABLE_SWEEP_LOOKAHEAD_SECONDS",
            getattr(settings, "DURABLE_SWEEP_INTERVAL_SECONDS", 1),
        )
    )


def crash_loop_limit() -> int:
    """Takeovers at one journal position, with no progress, before the run is blocked."""
    return int(getattr(settings, "DURABLE_CRASH_LOOP_LIMIT", 5))


def cancel_cleanup_seconds() -> float:
    """How long a graceful cancel lets the body clean up before it becomes immediate."""
    return float(getattr(settings, "DURABLE_CANCEL_CLEANUP_SECONDS", 3600))


def bulk_max_runs() -> int:
    """Runs one bulk operation may act on, over all its passes: a guard against a filter
    that keeps far more than the operator meant."""
    return int(getattr(settings, "DURABLE_BULK_MAX_RUNS", 10000))


def bulk_pass_seconds() -> float:
    """How long one bulk request acts before it stops and hands back a token to go on:
    under the web timeout (gunicorn's 30 s in deploy/durable-web.service)."""
    return float(getattr(settings, "DURABLE_BULK_PASS_SECONDS", 20))


def bulk_batch_size() -> int:
    """Run ids a bulk operation reads at a time (each run is then acted on in its own
    transaction)."""
    return int(getattr(settings, "DURABLE_BULK_BATCH", 200))


def bulk_confirm_seconds() -> int:
    """How long a bulk preview's confirmation token stays valid."""
    return int(getattr(settings, "DURABLE_BULK_CONFIRM_SECONDS", 900))


def default_queue() -> str:
    """The Celery queue of advances that ask for none: Celery's own default unless set."""
    return str(
        getattr(settings, "DURABLE_DEFAULT_QUEUE", "")
        or getattr(settings, "CELERY_TASK_DEFAULT_QUEUE", "")
        or "celery"
    )


def sweep_queue() -> str:
    """The queue beat sends ``durable.sweep`` to (CELERY_TASK_ROUTES), for messages that name it."""
    return str(getattr(settings, "DURABLE_SWEEP_QUEUE", "") or "durable-sweep")


def takeover_queue() -> str:
    """The default queue's lane for runs whose lease expired: the sweep sends their advance
    here, so a worker that died costs its runs no wait behind the backlog of new work."""
    return str(getattr(settings, "DURABLE_TAKEOVER_QUEUE", "") or "durable-takeover")


def limit_patience_seconds() -> float:
    """How long past its wake-up a run waiting on a limit keeps its place in line."""
    return float(getattr(settings, "DURABLE_LIMIT_PATIENCE_SECONDS", 60))


def database_pooler() -> str:
    """The pooler between the engine and PostgreSQL: "transaction" (each transaction may
    run on another server session), "session", or "" for none."""
    return str(getattr(settings, "DURABLE_DATABASE_POOLER", "") or "").strip().lower()


def api_token_days() -> int:
    """How long a new API token is valid unless its creator says otherwise."""
    return int(_setting("DURABLE_API_TOKEN_DAYS", legacy="API_TOKEN_DAYS", default=90))


def metrics_token() -> str:
    """The bearer token that reads /metrics without a staff session (empty: staff only)."""
    return str(_setting("DURABLE_METRICS_TOKEN", legacy="METRICS_TOKEN", default="") or "")


def var_dir() -> Path:
    """Where the engine keeps files of its own by default (the audit heads)."""
    return Path(_setting("DURABLE_VAR_DIR", legacy="VAR_DIR", default="var"))


def base_dir() -> Path | None:
    """The project's root: a determinism warning shows a file's path relative to it."""
    value = _setting("DURABLE_BASE_DIR", legacy="BASE_DIR", default=None)
    return Path(value) if value else None


def audit_key() -> bytes:
    """The key that seals the audit chains (durable/chain.py). Kept outside the database, so
    that whoever can write the audit tables cannot seal a rewritten row. Without
    DURABLE_AUDIT_KEY, one derived from SECRET_KEY (``check --deploy`` warns: rotating
    SECRET_KEY would then unseal every row)."""
    key = getattr(settings, "DURABLE_AUDIT_KEY", "")
    if key:
        return key.encode()
    return hmac.new(settings.SECRET_KEY.encode(), b"durable.audit-chain", hashlib.sha256).digest()


def audit_heads_sink() -> str:
    """Dotted path of the class that keeps the exported heads of the audit chains."""
    return getattr(settings, "DURABLE_AUDIT_HEADS_SINK", "durable.features.audit_heads.FileSink")


def audit_heads_file() -> str:
    """Where the default sink appends the heads: a path outside the database."""
    return str(
        getattr(settings, "DURABLE_AUDIT_HEADS_FILE", "") or var_dir() / "audit" / "heads.jsonl"
    )
