"""Django system checks of the engine: workflow bodies that would not replay, a
retention policy that beat could not run, schedules declared in code that the
database does not hold as declared, and a database connection that a pooler in
transaction mode would break."""

from django.conf import settings
from django.core import checks
from django.db import DEFAULT_DB_ALIAS, DatabaseError

from durable import conf
from durable.durations import parse_age
from durable.errors import DurableError
from durable.features import declared
from durable.features.archive import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE
from durable.runtime import registry
from durable.runtime.determinism import inspect_function


def check_workflows(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """Django system check over every registered workflow version."""
    messages, seen = [], set()
    for definition in sorted(registry.all_definitions(), key=lambda d: (d.name, d.version)):
        code = getattr(definition.fn, "__code__", None)
        if code in seen:
            continue
        seen.add(code)
        label = f"workflow {definition.name!r} v{definition.version}"
        for finding in inspect_function(definition.fn):
            messages.append(
                checks.Warning(
                    finding.message(), hint=finding.rule.fix, obj=label, id=finding.rule.id
                )
            )
    return messages


def check_retention(app_configs=None, **kwargs):
    """System check: a DURABLE_RETENTION that beat could not run is an error at startup."""
    policy = getattr(settings, "DURABLE_RETENTION", None)
    if not policy:
        return []
    problems = []
    if not isinstance(policy, dict) or "finished_before" not in policy:
        return [
            checks.Error(
                "DURABLE_RETENTION must be a dict with 'finished_before' (e.g. \"90d\")",
                id="durable.E101",
            )
        ]
    try:
        parse_age(policy["finished_before"])
    except ValueError as error:
        problems.append(
            checks.Error(f"DURABLE_RETENTION['finished_before']: {error}", id="durable.E101")
        )
    size = policy.get("batch_size", DEFAULT_BATCH_SIZE)
    if not isinstance(size, int) or not 1 <= size <= MAX_BATCH_SIZE:
        problems.append(
            checks.Error(
                f"DURABLE_RETENTION['batch_size'] must be 1..{MAX_BATCH_SIZE}, got {size!r}",
                id="durable.E102",
            )
        )
    return problems


def check_declared_schedules(app_configs=None, databases=None, **kwargs):
    """A declaration that could not be created is an error; drift from the database (run
    with ``manage.py check --database default``, or by ``migrate``) is a warning."""
    try:
        specs = declared.declared_schedules()
        for spec in specs:
            spec.fields()
    except (DurableError, ValueError) as error:  # ScheduleInvalid, WorkflowNotFound, PayloadError
        return [checks.Error(f"a declared schedule is invalid: {error}", id="durable.E201")]
    except Exception as error:  # a workflow module that did not import, say: say it, do not crash
        return [
            checks.Error(
                f"the declared schedules could not be read: {type(error).__name__}: {error}",
                id="durable.E201",
            )
        ]
    if not databases:
        return []
    try:
        drifts = declared.schedules_drift(specs)
    except DatabaseError:  # migrate checks before it creates the tables: nothing to compare yet
        return []
    hint = "run: python manage.py durable schedule sync"
    return [
        checks.Warning(
            f"schedule {drift.name!r} is declared in code but missing from the database"
            if drift.missing
            else f"schedule {drift.name!r} differs from its declaration: "
            + ", ".join(
                f"{name} is {old!r}, declared {new!r}" for name, (old, new) in drift.changed.items()
            ),
            hint=hint,
            id="durable.W201",
        )
        for drift in drifts
    ]


def check_audit_key(app_configs=None, **kwargs):
    """Deploy check: the audit seal key should be its own, not derived from SECRET_KEY,
    which is rotated for other reasons (a rotation would unseal every audit row)."""
    if getattr(settings, "DURABLE_AUDIT_KEY", "") or settings.DEBUG:
        return []
    return [
        checks.Warning(
            "DURABLE_AUDIT_KEY is not set: the audit rows are sealed with a key derived from "
            "SECRET_KEY",
            hint="set DURABLE_AUDIT_KEY once, before the first migrate, and never change it "
            '(docs/operations.md, "Audit trail")',
            id="durable.W301",
        )
    ]


POOLERS = ("session", "transaction")


def check_database_pooler(app_configs=None, **kwargs):
    """Behind a pooler in transaction mode (DURABLE_DATABASE_POOLER = "transaction") each
    transaction may run on another server session: a statement prepared or a cursor
    declared in one is missing from the next. Checks the connection the engine uses."""
    return pooler_problems(
        conf.database_pooler(), settings.DATABASES.get(DEFAULT_DB_ALIAS, {}), DEFAULT_DB_ALIAS
    )


def pooler_problems(pooler: str, database: dict, alias: str) -> list[checks.CheckMessage]:
    """What in ``database`` (a DATABASES entry) would not survive ``pooler``."""
    if not pooler:
        return []
    if pooler not in POOLERS:
        return [
            checks.Error(
                f"DURABLE_DATABASE_POOLER must be one of {', '.join(POOLERS)} or empty, "
                f"got {pooler!r}",
                id="durable.E401",
            )
        ]
    if pooler != "transaction" or not database.get("ENGINE", "").endswith("postgresql"):
        return []
    options, label = database.get("OPTIONS", {}), f"DATABASES[{alias!r}]"
    problems = []
    # Django's psycopg 3 cursors bind client-side unless server_side_binding is True, and
    # those never prepare; Django leaves prepare_threshold None unless OPTIONS set it.
    if options.get("server_side_binding") is True and options.get("prepare_threshold") is not None:
        problems.append(
            checks.Warning(
                "prepared statements are on behind a pooler in transaction mode: a statement "
                "prepared in one transaction is missing when the next runs on another session",
                hint="set DATABASE_PREPARED_STATEMENTS=off (OPTIONS prepare_threshold None); "
                "a PgBouncer 1.21+ with max_prepared_statements > 0 keeps them, and then "
                "this warning may be silenced (SILENCED_SYSTEM_CHECKS)",
                obj=label,
                id="durable.W401",
            )
        )
    if not database.get("DISABLE_SERVER_SIDE_CURSORS", False):
        problems.append(
            checks.Warning(
                "server-side cursors are on behind a pooler in transaction mode: "
                "QuerySet.iterator() declares a cursor that its next fetch may not find",
                hint=f"set DISABLE_SERVER_SIDE_CURSORS = True in {label}",
                obj=label,
                id="durable.W402",
            )
        )
    return problems


def register() -> None:
    checks.register(check_workflows, "durable")
    checks.register(check_audit_key, "durable", deploy=True)
    checks.register(check_retention, "durable")
    checks.register(check_database_pooler, "durable")
    checks.register(check_declared_schedules, "durable", checks.Tags.database)
