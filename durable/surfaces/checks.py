"""Django system checks of the engine: workflow bodies that would not replay, and a
retention policy that beat could not run."""
from django.conf import settings
from django.core import checks

from durable.features.archive import DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE
from durable.durations import parse_age
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
            messages.append(checks.Warning(finding.message(), hint=finding.rule.fix,
                                           obj=label, id=finding.rule.id))
    return messages


def check_retention(app_configs=None, **kwargs):
    """System check: a DURABLE_RETENTION that beat could not run is an error at startup."""
    policy = getattr(settings, "DURABLE_RETENTION", None)
    if not policy:
        return []
    problems = []
    if not isinstance(policy, dict) or "finished_before" not in policy:
        return [checks.Error("DURABLE_RETENTION must be a dict with 'finished_before' (e.g. \"90d\")",
                             id="durable.E101")]
    try:
        parse_age(policy["finished_before"])
    except ValueError as error:
        problems.append(checks.Error(f"DURABLE_RETENTION['finished_before']: {error}", id="durable.E101"))
    size = policy.get("batch_size", DEFAULT_BATCH_SIZE)
    if not isinstance(size, int) or not 1 <= size <= MAX_BATCH_SIZE:
        problems.append(checks.Error(f"DURABLE_RETENTION['batch_size'] must be 1..{MAX_BATCH_SIZE}, got {size!r}",
                                     id="durable.E102"))
    return problems


def register() -> None:
    checks.register(check_workflows, "durable")
    checks.register(check_retention, "durable")
