"""Settings read from the environment, with embedded defaults that need no services.

Defaults: SQLite (WAL, IMMEDIATE transactions) and Celery's filesystem transport, both
under ./var. Production and CI set DATABASE_URL and CELERY_BROKER_URL.
"""

import json
import os
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("DURABLE_VAR_DIR", BASE_DIR / "var"))
# The engine's names for them: its default files under var/, paths in its warnings from the root.
DURABLE_VAR_DIR = VAR_DIR
DURABLE_BASE_DIR = BASE_DIR


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def private_dir(path: Path) -> Path:
    """Create a folder only this user can enter (0700): keys, databases, queues and uploads live
    there."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    if path.stat().st_uid == os.getuid() and path.stat().st_mode & 0o077:
        path.chmod(0o700)  # a checkout made before var/ was private
    return path


def dev_secret_key(key_file: Path) -> str:
    """A per-checkout key for DEBUG only, created 0600; never committed, never used in
    production."""
    private_dir(key_file.parent)
    try:
        descriptor = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key_file.chmod(0o600)
    else:
        import secrets

        with os.fdopen(descriptor, "w") as handle:
            handle.write(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


DEBUG = env_bool("DEBUG", False)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        # A key generated on each host would break sessions and signed links across hosts.
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Production needs one key shared by every "
            "web host and worker (see docs/operations.md: the environment "
            "file); for local use set DEBUG=1 (scripts/run does)."
        )
    SECRET_KEY = dev_secret_key(VAR_DIR / "secret_key")
private_dir(VAR_DIR)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "durable",
    "processes",
    "approvals",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "config.input_guard.ControlCharacterGuard",  # a NUL would 500 on PostgreSQL wherever it went
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "approvals.middleware.UserLanguageMiddleware",
    "approvals.middleware.ReviewerTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
]

ROOT_URLCONF = "config.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "django.template.context_processors.i18n",
            ],
        },
    },
]
WSGI_APPLICATION = "config.wsgi.application"


# The pooler between the app and PostgreSQL, if any: "transaction" for PgBouncer's
# pool_mode = transaction, where each transaction may run on another server session, so
# nothing may outlive one (prepared statements, server-side cursors); "session" or unset
# when every connection keeps its own session. The engine's system check reads it
# (DURABLE_DATABASE_POOLER, durable.W401/W402) and docs/operations.md, "Topologies", says more.
DATABASE_POOLER = os.environ.get("DATABASE_POOLER", "").strip().lower() or None
BEHIND_TRANSACTION_POOLER = DATABASE_POOLER == "transaction"


def postgresql_statements() -> dict:
    """Bind parameters on the server and prepare a statement from its fifth use.

    The engine sends the same few statements for every step, so PostgreSQL parses each once
    per connection instead of once per call, and replans it only while a custom plan pays
    (its plan_cache_mode); measured in benchmarks/results/2026-12-02-afternoon-peers.md.
    A pooler in transaction mode (PgBouncer without max_prepared_statements) cannot keep
    a prepared statement between transactions: off behind DATABASE_POOLER=transaction, and
    wherever DATABASE_PREPARED_STATEMENTS=off (which also turns them back on there, for a
    PgBouncer that keeps them: max_prepared_statements > 0).
    """
    if env_bool("DATABASE_PREPARED_STATEMENTS", not BEHIND_TRANSACTION_POOLER):
        return {"server_side_binding": True, "prepare_threshold": 5}
    return {"server_side_binding": False, "prepare_threshold": None}


def split_hosts(url: str) -> tuple[str, str | None, str | None]:
    """``url`` with its first host only, and the hosts and ports as libpq lists them.

    libpq takes several hosts (``postgres://u@h1:5432,h2:5432/db``), tries them in order
    and, with ``target_session_attrs=read-write``, settles on the primary, so a promoted
    standby is found without a new setting. dj-database-url reads one host; the lists go
    to HOST and PORT (None and None for a single host).
    """
    scheme, rest = url.split("://", 1) if "://" in url else ("", url)
    end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
    netloc, tail = rest[:end], rest[end:]  # the database, the query: after the hosts
    auth, at, hosts = netloc.rpartition("@")
    if "," not in hosts:
        return url, None, None
    items = hosts.split(",")
    names, ports = [], []
    for item in items:
        name, _, port = item.rpartition(":") if not item.endswith("]") else (item, "", "")
        if not name or name.endswith(":"):  # no port, or a bare IPv6 address
            name, port = item, ""
        names.append(unquote(name.strip("[]")))  # a socket directory is percent-encoded
        ports.append(port)
    first = f"{auth}{at}{items[0]}"  # as written: dj-database-url decodes it itself
    return f"{scheme}://{first}{tail}", ",".join(names), ",".join(ports)


def database_from_env() -> dict:
    url = os.environ.get("DATABASE_URL")
    if url:
        url, hosts, ports = split_hosts(url)
        database = dj_database_url.parse(
            url, conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60"))
        )
        if database["ENGINE"] == "django.db.backends.postgresql":
            if hosts:
                database.update(HOST=hosts, PORT=ports)
            # A host that does not answer (down, cut off) is given up after this many
            # seconds and the next one tried; the URL's own connect_timeout wins.
            options = {
                "connect_timeout": int(os.environ.get("DATABASE_CONNECT_TIMEOUT", "5")),
                **database.get("OPTIONS", {}),
            }
            return {
                **database,
                "OPTIONS": {**options, **postgresql_statements()},
                # QuerySet.iterator() would DECLARE a cursor that the next FETCH, sent in
                # another transaction, may not find behind a transaction pooler.
                "DISABLE_SERVER_SIDE_CURSORS": BEHIND_TRANSACTION_POOLER,
            }
        if database["ENGINE"] != "django.db.backends.sqlite3":
            return database
        database["CONN_MAX_AGE"] = 0
    else:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": VAR_DIR / "db.sqlite3"}
    return {
        **database,
        "OPTIONS": {
            # IMMEDIATE takes the write lock at BEGIN, so two writers queue instead of
            # failing with "database is locked" half-way through a transaction.
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        },
        # Tests share the file with worker subprocesses, so it cannot be in memory.
        "TEST": {
            "NAME": str(Path(database["NAME"]).with_name("test_" + Path(database["NAME"]).name))
        },
    }


DATABASES = {"default": database_from_env()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

# The reviewers are a Brazilian compliance team: Portuguese unless the environment says
# otherwise; each user may switch to English (approvals.middleware, stored per user).
LANGUAGE_CODE = os.environ.get("LANGUAGE_CODE", "pt-br")
LANGUAGES = [("pt-br", "Português (Brasil)"), ("en", "English")]
LOCALE_PATHS = [BASE_DIR / "locale"]
# The server's zone (logs, the admin, stored values are UTC); reviewer pages show times in
# REVIEWER_TIME_ZONE instead.
TIME_ZONE = "UTC"
REVIEWER_TIME_ZONE = os.environ.get("REVIEWER_TIME_ZONE", "America/Sao_Paulo")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
MEDIA_URL = "media/"
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", VAR_DIR / "media"))

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "/"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
# OpenAPI at /api/schema/, Swagger UI at /api/docs/ (assets from our static files, no CDN).
SPECTACULAR_SETTINGS = {
    "TITLE": "Durable processes API",
    "DESCRIPTION": "Runs of durable workflows: list, inspect, start, signal, cancel, retry, wake.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SERVE_AUTHENTICATION": [
        "durable.surfaces.tokens.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "durable.models.RunStatus",
        "EntryStatusEnum": "durable.models.EntryStatus",
        "BulkActionEnum": "durable.features.bulk.ACTIONS",
        "InvoiceOperationStatusEnum": "processes.billing.api.OPERATION_STATUSES",
    },
}
# The API refuses larger request bodies (413) and larger signal payloads or run input (400).
DURABLE_API_MAX_PAYLOAD_BYTES = int(os.environ.get("DURABLE_API_MAX_PAYLOAD_BYTES", str(64 * 1024)))
# /metrics answers a staff session or "Authorization: Bearer $DURABLE_METRICS_TOKEN" (empty:
# staff only). The environment's METRICS_TOKEN, the name it had before, is still read.
DURABLE_METRICS_TOKEN = os.environ.get("DURABLE_METRICS_TOKEN", os.environ.get("METRICS_TOKEN", ""))

# --- Celery: the broker only carries "advance run X"; the database is the truth. ---
# Empty means unset, as for DATABASE_URL. The host is a placeholder the filesystem transport
# ignores; without one kombu warns "No hostname was supplied" on every connection.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "").strip() or "filesystem://localhost/"
BROKER_DIR = Path(os.environ.get("CELERY_BROKER_DIR", VAR_DIR / "broker"))
CELERY_BROKER_TRANSPORT_OPTIONS = {}
if CELERY_BROKER_URL.startswith("filesystem"):
    # One folder is both the way in and the way out, so producers and workers share a queue.
    _folders = {
        "data_folder_in": "queue",
        "data_folder_out": "queue",
        "processed_folder": "processed",
        "control_folder": "control",
    }
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        key: str(BROKER_DIR / name) for key, name in _folders.items()
    }
    CELERY_BROKER_TRANSPORT_OPTIONS.update(polling_interval=0.05)
    CELERY_BROKER_TRANSPORT = "config.broker:Transport"  # atomic writes, see config/broker.py
    for _folder in set(_folders.values()):
        (BROKER_DIR / _folder).mkdir(parents=True, exist_ok=True)
if CELERY_BROKER_URL.startswith("redis://"):
    CELERY_BROKER_TRANSPORT = (
        "config.broker:RedisTransport"  # survives a Redis restart, see config/broker.py
    )
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE_FILENAME = str(VAR_DIR / "celerybeat-schedule")
# Celery's scheduler, with publisher confirms on quorum queues (config/beat.py): a channel
# opened during a quorum leader election may drop all it publishes, and only a confirm
# that never comes tells beat to reconnect.
CELERY_BEAT_SCHEDULER = "config.beat:Scheduler"
# RabbitMQ serves a run's priority (durable.runtime.priorities) only on queues declared with
# x-max-priority. Off unless set: RabbitMQ refuses to redeclare an existing queue with other
# arguments, so turning it on means deleting the queues first (docs/workflows.md).
if os.environ.get("CELERY_TASK_QUEUE_MAX_PRIORITY", "").strip():
    CELERY_TASK_QUEUE_MAX_PRIORITY = int(os.environ["CELERY_TASK_QUEUE_MAX_PRIORITY"])
# "quorum": every queue the engine and the site declare (the three below, and those Celery
# creates when named, such as "llm") is a RabbitMQ quorum queue, replicated across a
# cluster's nodes, so a node's loss loses no message (docs/operations.md, "Topologies").
# Celery then gives up global QoS, as quorum queues require. RabbitMQ 3.x refuses
# x-max-priority on a quorum queue: the broker serves such queues in order, and a run's
# priority counts only in the sweep's pick and a limit's line. Like a priority, the type
# is fixed when a queue is first declared: switching means deleting the queues first.
CELERY_QUEUE_TYPE = os.environ.get("CELERY_QUEUE_TYPE", "").strip() or "classic"
if CELERY_QUEUE_TYPE not in ("classic", "quorum"):
    raise ImproperlyConfigured(
        f"CELERY_QUEUE_TYPE is 'classic' or 'quorum', not {CELERY_QUEUE_TYPE!r}"
    )
if CELERY_QUEUE_TYPE == "quorum" and globals().get("CELERY_TASK_QUEUE_MAX_PRIORITY"):
    raise ImproperlyConfigured(
        "CELERY_TASK_QUEUE_MAX_PRIORITY cannot go with CELERY_QUEUE_TYPE=quorum: RabbitMQ 3.x "
        "refuses x-max-priority on a quorum queue"
    )
CELERY_TASK_DEFAULT_QUEUE_TYPE = CELERY_QUEUE_TYPE
CELERY_TASK_CREATE_MISSING_QUEUE_TYPE = CELERY_QUEUE_TYPE
_QUEUE_ARGUMENTS = {"x-queue-type": "quorum"} if CELERY_QUEUE_TYPE == "quorum" else None
if CELERY_QUEUE_TYPE == "quorum":
    # The engine's countdowns (under one sweep tick) stay on the worker, as on classic
    # queues; Celery's native delayed delivery would round them down to whole seconds.
    CELERY_WORKER_CONSUMER = "config.consumer:ConsumerWithoutDelayedDelivery"
# Three queues that a worker started without -Q consumes: the default one, its lane for
# takeovers (runs whose worker died are advanced before the backlog of new work), and the
# sweep's (it never waits behind advances). Production gives the sweep a worker of its own
# too (deploy/durable-worker-sweep.service); docs/operations.md, "Running in production".
CELERY_TASK_DEFAULT_QUEUE = os.environ.get("CELERY_TASK_DEFAULT_QUEUE", "celery")
# Fixed names: scripts/run_stack.py and deploy/durable-worker-sweep.service name them too.
DURABLE_TAKEOVER_QUEUE = "durable-takeover"
DURABLE_SWEEP_QUEUE = "durable-sweep"
# Each as Celery declares a queue it creates itself: a direct exchange and routing key of its name.
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name, queue_arguments=_QUEUE_ARGUMENTS)
    for name in (CELERY_TASK_DEFAULT_QUEUE, DURABLE_TAKEOVER_QUEUE, DURABLE_SWEEP_QUEUE)
]
CELERY_TASK_ROUTES = {"durable.sweep": {"queue": DURABLE_SWEEP_QUEUE}}

# --- The durable engine. ---
DURABLE_DATABASE_POOLER = DATABASE_POOLER
# System checks an operator has judged, comma-separated: e.g. durable.W401 behind a PgBouncer
# 1.21+ that keeps prepared statements (max_prepared_statements > 0), which no check can see.
SILENCED_SYSTEM_CHECKS = [
    check.strip()
    for check in os.environ.get("SILENCED_SYSTEM_CHECKS", "").split(",")
    if check.strip()
]
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The reviewer queue's covering index (approvals 0012) includes columns SQLite leaves
    # out; the index itself is built. Its warning would greet every first run on SQLite.
    SILENCED_SYSTEM_CHECKS.append("models.W040")
DURABLE_DISPATCHER = os.environ.get("DURABLE_DISPATCHER", "celery")
DURABLE_LEASE_SECONDS = float(os.environ.get("DURABLE_LEASE_SECONDS", "15"))
DURABLE_DISPATCH_GRACE_SECONDS = float(os.environ.get("DURABLE_DISPATCH_GRACE_SECONDS", "10"))
DURABLE_SWEEP_INTERVAL_SECONDS = float(os.environ.get("DURABLE_SWEEP_INTERVAL_SECONDS", "1"))
DURABLE_SWEEP_BATCH = int(os.environ.get("DURABLE_SWEEP_BATCH", "500"))
# How long a run waiting in a limit's line keeps its place once it could act and did not
# come back for it (durable/runtime/limits.py).
DURABLE_LIMIT_PATIENCE_SECONDS = float(os.environ.get("DURABLE_LIMIT_PATIENCE_SECONDS", "60"))
DURABLE_WORKFLOW_MODULES = env_list("DURABLE_WORKFLOW_MODULES", "")
DURABLE_HEARTBEAT = env_bool("DURABLE_HEARTBEAT", True)
DURABLE_CRASH_LOOP_LIMIT = int(os.environ.get("DURABLE_CRASH_LOOP_LIMIT", "5"))
DURABLE_CANCEL_CLEANUP_SECONDS = float(os.environ.get("DURABLE_CANCEL_CLEANUP_SECONDS", "3600"))
# Retention: beat's durable.retention archives runs that finished longer ago than this
# (e.g. "90d"), at most max_runs per pass; "export" is a directory for gzip JSON Lines
# instead of the archive tables. Off (None) unless DURABLE_RETENTION_FINISHED_BEFORE is set.
DURABLE_RETENTION = (
    {
        "finished_before": os.environ["DURABLE_RETENTION_FINISHED_BEFORE"],
        "export": os.environ.get("DURABLE_RETENTION_EXPORT_DIR") or None,
        "batch_size": int(os.environ.get("DURABLE_RETENTION_BATCH_SIZE", "500")),
        "max_runs": int(os.environ.get("DURABLE_RETENTION_MAX_RUNS", "50000")),
    }
    if os.environ.get("DURABLE_RETENTION_FINISHED_BEFORE")
    else None
)
# The audit chains' seal key (durable/chain.py), kept out of the database. Unset, it is derived
# from SECRET_KEY (check --deploy warns). Beat appends the chains' heads every
# DURABLE_AUDIT_HEADS_INTERVAL_SECONDS through the sink, by default to the file below;
# ``durable audit verify --against`` reads them back (docs/operations.md, "Audit trail").
DURABLE_AUDIT_KEY = os.environ.get("DURABLE_AUDIT_KEY", "")
DURABLE_AUDIT_HEADS_SINK = os.environ.get(
    "DURABLE_AUDIT_HEADS_SINK", "durable.features.audit_heads.FileSink"
)
DURABLE_AUDIT_HEADS_FILE = os.environ.get("DURABLE_AUDIT_HEADS_FILE", "") or str(
    VAR_DIR / "audit" / "heads.jsonl"
)
# Calls that break replay (clock, random, network, queries) raise inside workflow bodies.
# It patches the standard library process-wide, so only tests turn it on by default.
DURABLE_STRICT = env_bool("DURABLE_STRICT", False)

# The "durable" cache is shared by web and workers: the sweep stores its last duration
# there for /metrics. Redis when the broker is Redis, else a folder under var/.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "durable": {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(VAR_DIR / "cache"),
    },
}
if CELERY_BROKER_URL.startswith("redis"):
    CACHES["durable"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": CELERY_BROKER_URL,
        "KEY_PREFIX": "durable",
    }

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {
            "format": (
                "%(asctime)s %(levelname)s %(name)s [run=%(run_id)s pos=%(position)s] %(message)s"
            )
        }
    },
    # Stamps run_id and position from the replay context on every record
    # (durable/runtime/logging.py).
    "filters": {
        "run_context": {"()": "durable.runtime.logging.RunContextFilter"},
        "refused_in_one_line": {"()": "config.log_filters.RefusedInOneLine"},
        "secrets_scrubbed": {"()": "config.log_filters.SecretsScrubbed"},
        "countdowns_on_the_worker": {"()": "config.log_filters.CountdownsStayOnTheWorker"},
    },
    # No line shows a secret sent in a URL (the WhatsApp verify token): config/log_filters.py.
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "plain",
            "filters": ["run_context", "secrets_scrubbed"],
        }
    },
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    "loggers": {
        # Django's own console handler (DEBUG only) would print each django.* record a
        # second time beside the root one: a 403's traceback twice, every 404 twice.
        "django": {"handlers": [], "level": "INFO"},
        "django.db.backends": {"level": "INFO"},
        # runserver's request lines, query string included: through the console handler, scrubbed.
        "django.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        # A refused request (403) is one line, without the PermissionDenied's traceback.
        "django.request": {"filters": ["refused_in_one_line"]},
        # One line per sweep tick and per advance is noise; failures still log.
        "celery.app.trace": {"level": "WARNING"},
        "celery.worker.strategy": {"level": "WARNING"},
        "celery.beat": {"level": "WARNING"},
        # Quorum queues: a warning per countdown sent, which the engine means to send.
        "celery.app.base": {"filters": ["countdowns_on_the_worker"]},
    },
}


# --- processes: WhatsApp, payments, document checks, reconciliation (docs/processes.md). ---
# Secrets come from the environment; the dev values below apply only when DEBUG is on
# (tests set their own). Without a secret the webhooks refuse every request.
def dev_secret(name: str, dev_value: str) -> str:
    return os.environ.get(name, "") or (dev_value if DEBUG else "")


WHATSAPP_APP_SECRET = dev_secret("WHATSAPP_APP_SECRET", "dev-whatsapp-app-secret")
WHATSAPP_VERIFY_TOKEN = dev_secret("WHATSAPP_VERIFY_TOKEN", "dev-verify-token")
WHATSAPP_ACCESS_TOKEN = os.environ.get("WHATSAPP_ACCESS_TOKEN", "")
WHATSAPP_PHONE_NUMBER_ID = os.environ.get("WHATSAPP_PHONE_NUMBER_ID", "")
WHATSAPP_BACKEND = os.environ.get("WHATSAPP_BACKEND", "console")  # console | cloud_api
# Who processes a stored delivery (its messages stored and routed, in order): "celery" (a
# worker, after the webhook answered) or "inline" (the web process, after its commit).
WHATSAPP_INTAKE = os.environ.get("WHATSAPP_INTAKE", "celery")
WHATSAPP_API_BASE_URL = os.environ.get("WHATSAPP_API_BASE_URL", "https://graph.facebook.com/v21.0")
# Outside the 24-hour window only approved templates go out: one per purpose, with the
# parameters its sender provides (docs/processes.md, "Templates"; checked at startup).
WHATSAPP_TEMPLATE_LANGUAGE = os.environ.get("WHATSAPP_TEMPLATE_LANGUAGE", "pt_BR")


def whatsapp_template(purpose: str, name: str, parameters: list[str]) -> dict:
    """A purpose's template; ``WHATSAPP_TEMPLATE_<PURPOSE>`` names another (the name as
    approved in WhatsApp Manager), so a deployment maps each purpose without a code change."""
    return {
        "name": os.environ.get(f"WHATSAPP_TEMPLATE_{purpose.upper()}", name),
        "language": WHATSAPP_TEMPLATE_LANGUAGE,
        "parameters": parameters,
    }


WHATSAPP_TEMPLATES = {
    "generic": {
        "name": os.environ.get("WHATSAPP_TEMPLATE_NAME", "account_update"),
        "language": WHATSAPP_TEMPLATE_LANGUAGE,
        "parameters": ["body"],
    },
    "greeting": whatsapp_template("greeting", "onboarding_greeting", []),
    "documents_request": whatsapp_template(
        "documents_request", "onboarding_documents_request", ["missing"]
    ),
    "document_reminder": whatsapp_template("document_reminder", "onboarding_document_reminder", []),
    "decision_approved": whatsapp_template("decision_approved", "onboarding_approved", ["account"]),
    "decision_rejected": whatsapp_template("decision_rejected", "onboarding_rejected", []),
    "decision_more_documents": whatsapp_template(
        "decision_more_documents", "onboarding_more_documents", ["request"]
    ),
    "billing_reminder": whatsapp_template(
        "billing_reminder", "invoice_reminder", ["number", "invoice", "amount", "due_date"]
    ),
}
# Messages a second the Cloud API takes from our number, across all workers (durable.limit).
WHATSAPP_SEND_RATE = int(os.environ.get("WHATSAPP_SEND_RATE", "20"))
# Media URLs named by the provider are fetched only from these hosts, and only over https
# (tests allow http to 127.0.0.1 explicitly; production never needs another scheme).
WHATSAPP_MEDIA_HOSTS = env_list("WHATSAPP_MEDIA_HOSTS", "lookaside.fbsbx.com,graph.facebook.com")
WHATSAPP_MEDIA_SCHEMES = ["https"]
PAYMENTS_WEBHOOK_SECRET = dev_secret("PAYMENTS_WEBHOOK_SECRET", "dev-payments-secret")
DOCUMENT_CHECKER = os.environ.get("DOCUMENT_CHECKER", "rules")  # rules | llm
DOCUMENT_MAX_BYTES = int(os.environ.get("DOCUMENT_MAX_BYTES", str(10 * 1024 * 1024)))
# A round of documents closes once the customer has sent nothing for this long (docs/processes.md).
ONBOARDING_DOCUMENTS_QUIET_SECONDS = float(
    os.environ.get("ONBOARDING_DOCUMENTS_QUIET_SECONDS", "30")
)
# New customers arrive at a bounded rate (processes/onboarding/admission.py): over a cap a
# first message is held, not lost, and routed again by the beat's sweep once there is room.
ONBOARDING_NEW_SENDERS_PER_HOUR = int(os.environ.get("ONBOARDING_NEW_SENDERS_PER_HOUR", "120"))
ONBOARDING_APPLICATIONS_PER_NUMBER_PER_DAY = int(
    os.environ.get("ONBOARDING_APPLICATIONS_PER_NUMBER_PER_DAY", "3")
)
# With the documents complete and no valid CNPJ, the customer is asked once and given this long.
ONBOARDING_CNPJ_WAIT_SECONDS = float(os.environ.get("ONBOARDING_CNPJ_WAIT_SECONDS", "86400"))
# The CNPJ registry (processes/onboarding/registry.py): the fake by default, whose table
# (a JSON object: {"<14 digits>": {"legal_name": ..., "status": "BAIXADA"}}) may come from
# the environment; HttpRegistry with an https ONBOARDING_CNPJ_REGISTRY_URL in production.
ONBOARDING_CNPJ_REGISTRY = os.environ.get(
    "ONBOARDING_CNPJ_REGISTRY", "processes.onboarding.registry.FakeRegistry"
)
ONBOARDING_CNPJ_REGISTRY_URL = os.environ.get("ONBOARDING_CNPJ_REGISTRY_URL", "")
ONBOARDING_FAKE_REGISTRY = json.loads(os.environ.get("ONBOARDING_FAKE_REGISTRY", "") or "{}")
# The reviewer workbench (docs/approvals.md): a claim older than this is flagged as stale
# for the supervisor; a case open longer than the SLA counts as past SLA on the dashboard.
APPROVALS_STALE_CLAIM_HOURS = float(os.environ.get("APPROVALS_STALE_CLAIM_HOURS", "4"))
APPROVALS_SLA_HOURS = float(os.environ.get("APPROVALS_SLA_HOURS", "24"))
# /metrics counts the reviewers' votes by outcome; on, it labels them with each reviewer's user
# name too (whoever reads the metrics then sees who decided what).
APPROVALS_METRICS_REVIEWER_NAMES = env_bool("APPROVALS_METRICS_REVIEWER_NAMES", False)
# The language a decision's message to the customer is composed in (approvals/customer_messages.py).
APPROVALS_CUSTOMER_LANGUAGE = os.environ.get("APPROVALS_CUSTOMER_LANGUAGE", "pt-br")
# How deeply a JSON value sent to the REST API (signal payload, run input) may nest (docs/api.md).
DURABLE_API_MAX_PAYLOAD_DEPTH = int(os.environ.get("DURABLE_API_MAX_PAYLOAD_DEPTH", "32"))
LLM_API_BASE_URL = os.environ.get("LLM_API_BASE_URL", "")
LLM_API_KEY = os.environ.get("LLM_API_KEY", "")
LLM_MODEL = os.environ.get("LLM_MODEL", "")
LLM_CONCURRENCY = int(
    os.environ.get("LLM_CONCURRENCY", "4")
)  # document checks at once, all workers
RECONCILIATION_CLOSING_TIME = os.environ.get("RECONCILIATION_CLOSING_TIME", "06:00")
RECONCILIATION_BANK_CLIENT = os.environ.get(
    "RECONCILIATION_BANK_CLIENT", "processes.reconciliation.clients.FakeBank"
)
RECONCILIATION_LEDGER_CLIENT = os.environ.get(
    "RECONCILIATION_LEDGER_CLIENT", "processes.reconciliation.clients.DatabaseLedger"
)

# =========================================================================================
# Production hardening (docs/operations.md): HTTPS, cookies, proxy, static files, uploads,
# login throttling, API throttling. Every value comes from the environment; the defaults
# keep plain-HTTP local use and the tests working. SECURE_HTTPS=1 turns the HTTPS group on.
# =========================================================================================
SECURE_HTTPS = env_bool("SECURE_HTTPS", False)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", SECURE_HTTPS)
# Only behind a proxy that sets this header on every request (and drops a client's own).
SECURE_PROXY_SSL_HEADER = (
    (os.environ["SECURE_PROXY_SSL_HEADER"], "https")
    if os.environ.get("SECURE_PROXY_SSL_HEADER")
    else None
)
SECURE_HSTS_SECONDS = int(
    os.environ.get("SECURE_HSTS_SECONDS", str(365 * 24 * 3600 if SECURE_HTTPS else 0))
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HTTPS)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HTTPS)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", SECURE_HTTPS)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SECURE_HTTPS)
SESSION_COOKIE_HTTPONLY = True
# A sign-in lasts a working day at most (SESSION_HOURS) and ends when the browser closes: the
# workbench shows customers' documents, often on shared office computers. Not renewed by use
# (the case page polls every 2 s, which would keep an unattended session alive for ever).
SESSION_COOKIE_AGE = int(float(os.environ.get("SESSION_HOURS", "8")) * 3600)
SESSION_EXPIRE_AT_BROWSER_CLOSE = env_bool("SESSION_EXPIRE_AT_BROWSER_CLOSE", True)
# Content-Security-Policy on every response (django-csp): scripts, styles, images, fetches and
# forms from this origin only, no inline script or style, no plugin, never framed. The app's
# own pages, the admin and the API docs pass it (tests/config/test_content_security_policy.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    }
}
# How many proxies in front append to X-Forwarded-For; 0 trusts REMOTE_ADDR only (config/proxy.py).
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))

# Request bodies (webhooks included: they are never throttled) are refused past this size.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("DATA_UPLOAD_MAX_MEMORY_SIZE", str(2_621_440)))
# Uploaded and stored files are readable by this user only, like everything under var/.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

# Static files: collected into STATIC_ROOT and served, compressed, by the web process.
private_dir(STATIC_ROOT)
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
    "whitenoise.middleware.WhiteNoiseMiddleware",
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Failed logins (reviewer login, admin, API basic auth): locked per user name and per
# address after AXES_FAILURE_LIMIT failures, for AXES_COOLOFF_MINUTES; listed in the admin.
INSTALLED_APPS.append("axes")
MIDDLEWARE.append("axes.middleware.AxesMiddleware")
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("AXES_COOLOFF_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "config.proxy.client_ip"
LOGGING["loggers"]["axes"] = {
    "level": "WARNING"
}  # lockouts still log; its start-up banner does not

# API clients that authenticate with a token are throttled per token owner (config/throttling.py);
# people in the browser and the signed webhooks are not.
REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"] = ["config.throttling.TokenClientThrottle"]
REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] = {
    "token": os.environ.get("API_TOKEN_THROTTLE_RATE", "1200/min")
}
# API tokens (manage.py durable token create|list|revoke) are stored as digests, scoped read or
# operate, and expire after this many days unless created with --days (docs/api.md).
DURABLE_API_TOKEN_DAYS = int(
    os.environ.get("DURABLE_API_TOKEN_DAYS", os.environ.get("API_TOKEN_DAYS", "90"))
)
SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"] = [
    "drf_spectacular.hooks.postprocess_schema_enums",
    "config.throttling.document_throttling",
    "durable.surfaces.openapi.blank_text_is_one_alternative",
]
