"""Durable execution for Django: workflows replayed from a journal of their steps.

Import the public API from here: ``from durable import workflow, days, Retry``. Names are
resolved lazily, because Django imports this package before its models are ready.
"""

import importlib

__version__ = "0.1.0"

_EXPORTS = {
    "workflow": "durable.runtime.workflow",
    "Retry": "durable.runtime.retry",
    "limit": "durable.runtime.limits",
    "Limit": "durable.runtime.limits",
    "days": "durable.durations",
    "hours": "durable.durations",
    "minutes": "durable.durations",
    "seconds": "durable.durations",
    "StepInfo": "durable.runtime.context",
    "current_step": "durable.runtime.context",
    "Cancelled": "durable.errors",
    "ChildFailed": "durable.errors",
    "ChildHandle": "durable.runtime.context",
    "Received": "durable.runtime.context",
    "StepFailed": "durable.errors",
    "StepTimeout": "durable.errors",
    "InvalidFork": "durable.errors",
    "QueryFailed": "durable.errors",
    "QueryNotFound": "durable.errors",
    "RunConflict": "durable.errors",
    "RunFinished": "durable.errors",
    "RunNotFound": "durable.errors",
    "SignalConflict": "durable.errors",
    "UpdateFailed": "durable.errors",
    "UpdateNotFound": "durable.errors",
    "UpdateRejected": "durable.errors",
    "UpdateTimeout": "durable.errors",
    "reserve_dedupe_prefix": "durable.runtime.registry",
    "WorkflowNotFound": "durable.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'durable' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
