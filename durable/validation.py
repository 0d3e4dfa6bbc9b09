"""Checks on operator input (API, admin, CLI) before it reaches the services.

A value that the database cannot store (a NUL character, a lone surrogate) or a run
input that the workflow function cannot accept must be refused here with a message,
not discovered by a worker days later. Nothing in this module writes.
"""

import inspect
import json

from django.conf import settings

from durable.errors import PayloadError, PayloadTooDeep
from durable.runtime import registry

# Keyword names that services.run_start keeps for itself.
RESERVED_INPUT_NAMES = frozenset({"id", "actor", "audit", "workflow"})


def max_payload_bytes() -> int:
    return int(getattr(settings, "DURABLE_API_MAX_PAYLOAD_BYTES", 64 * 1024))


def max_payload_depth() -> int:
    return int(getattr(settings, "DURABLE_API_MAX_PAYLOAD_DEPTH", 32))


def check_text(value: str, *, what: str) -> str:
    """Refuse text that PostgreSQL or UTF-8 cannot store (NUL, lone surrogates)."""
    if "\x00" in value:
        raise PayloadError(f"{what} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise PayloadError(f"{what} is not valid UTF-8 text") from None
    return value


def check_json_value(value, *, what: str = "payload"):
    """Refuse a JSON value the journal cannot store, nested deeper than the depth limit (the
    codec and the replay recurse), or larger than the payload limit."""
    limit = max_payload_depth()
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)) and depth >= limit:
            raise PayloadTooDeep(
                f"{what} is nested too deep: more than {limit} levels "
                "(DURABLE_API_MAX_PAYLOAD_DEPTH)"
            )
        if isinstance(item, str):
            check_text(item, what=what)
        elif isinstance(item, dict):
            for key, nested in item.items():
                check_text(str(key), what=f"{what} key")
                stack.append((nested, depth + 1))
        elif isinstance(item, list):
            stack.extend((nested, depth + 1) for nested in item)
        elif isinstance(item, float) and (item != item or item in (float("inf"), float("-inf"))):
            raise PayloadError(f"{what} contains {item!r}, which is not JSON")
    size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
    if size > max_payload_bytes():
        raise PayloadError(f"{what} is {size} bytes; the limit is {max_payload_bytes()} bytes")
    return value


def check_run_input(workflow_name: str, args: list, kwargs: dict) -> None:
    """Refuse input that the workflow's function cannot be called with (raises WorkflowNotFound
    for an unknown workflow, PayloadError for a mismatch)."""
    definition = registry.resolve(workflow_name)
    reserved = RESERVED_INPUT_NAMES & set(kwargs)
    if reserved:
        raise PayloadError(f"input names {sorted(reserved)} are reserved by the engine")
    check_json_value({"args": args, "kwargs": kwargs}, what="input")
    try:
        inspect.signature(definition.fn).bind(*args, **kwargs)
    except TypeError as error:
        raise PayloadError(f"input does not fit workflow {definition.name!r}: {error}") from None
