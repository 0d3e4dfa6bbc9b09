"""The Celery app: transport for "advance run X" messages and the beat sweep."""

import os

from celery import Celery
from celery.concurrency import get_implementation
from celery.concurrency.prefork import TaskPool as PreforkPool
from celery.signals import worker_init, worker_process_init, worker_process_shutdown

from config import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("config")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_interval = float(os.environ.get("DURABLE_SWEEP_INTERVAL_SECONDS", "1"))
app.conf.beat_schedule = {
    "durable-sweep": {
        "task": "durable.sweep",
        "schedule": _interval,
        # No expiry: on its own queue (CELERY_TASK_ROUTES) a sweep waits only for the one
        # before it, and one that waited still does the work due when it runs. Expired
        # sweeps thrown away behind a backlog once left runs unswept for 70 s.
    },
}

# Celery's Django fixup closes the database connection around every task unless told to
# reuse it; a new PostgreSQL connection per advance would cost more than the advance.
# durable.tasks closes connections that are broken or past CONN_MAX_AGE instead.
app.conf["CELERY_DB_REUSE_MAX"] = 1_000_000

# Daily reconciliation is a durable schedule (a row, fired by durable.sweep), not a beat
# entry: see processes/migrations/0006_reconcile_schedule.py and docs/workflows.md.

# The WhatsApp intake's safety net: deliveries whose intake task was lost (a web process
# died between its commit and the send), and messages stored but never routed.
app.conf.beat_schedule["processes-route-stale-inbound"] = {
    "task": "processes.route_stale_inbound",
    "schedule": 15.0,
    "options": {"expires": 60},
}

# Retention (durable archive): one bounded pass per interval; the task does nothing unless
# DURABLE_RETENTION is set (off by default). See docs/operations.md.
_retention_every = float(os.environ.get("DURABLE_RETENTION_INTERVAL_SECONDS", "3600"))
app.conf.beat_schedule["durable-retention"] = {
    "task": "durable.retention",
    "schedule": _retention_every,
    "options": {"expires": _retention_every},
}

# The audit chains' heads, appended outside the database (DURABLE_AUDIT_HEADS_SINK): what
# ``durable audit verify --against`` checks a cut or emptied chain with. docs/operations.md.
_audit_heads_every = float(os.environ.get("DURABLE_AUDIT_HEADS_INTERVAL_SECONDS", "3600"))
app.conf.beat_schedule["durable-audit-heads"] = {
    "task": "durable.audit_heads",
    "schedule": _audit_heads_every,
    "options": {"expires": _audit_heads_every},
}


# Traces (docs/operations.md): the SDK is set up in the process that runs the tasks, only
# when OTEL_TRACES_EXPORTER names an exporter. A prefork pool's children each set up their
# own after the fork (an exporter's connections and threads do not survive one); the solo
# and threads pools run tasks in the worker's own process.
@worker_init.connect
def _traces_in_the_worker(sender=None, **kwargs):
    pool = get_implementation(getattr(sender, "pool_cls", None) or "prefork")
    if not (isinstance(pool, type) and issubclass(pool, PreforkPool)):
        tracing.install(service="durable-worker")


@worker_process_init.connect
def _traces_in_the_pool_process(**kwargs):
    tracing.install(service="durable-worker")


@worker_process_shutdown.connect
def _flush_traces(**kwargs):
    tracing.flush()
