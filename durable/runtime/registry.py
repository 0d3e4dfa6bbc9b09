"""Registered workflow definitions, by name and version, so a run finds the code it started with."""

import inspect
import typing
from collections.abc import Callable
from dataclasses import dataclass, field

from durable import codec
from durable.errors import WorkflowNotFound


@dataclass
class WorkflowDefinition:
    name: str
    version: int
    fn: Callable
    lease_seconds: float | None = None
    # The Celery queue its advances go to (None: the default queue); a step may ask for another.
    queue: str | None = None
    _param_hints: list = field(default_factory=list, repr=False)

    def __post_init__(self):
        try:
            hints = typing.get_type_hints(self.fn)
        except Exception:
            hints = {}
        params = inspect.signature(self.fn).parameters.values()
        self._param_hints = [(p.name, hints.get(p.name)) for p in params]

    @property
    def source(self) -> str:
        return f"{self.fn.__module__}.{self.fn.__qualname__}"

    def encode_input(self, args: tuple, kwargs: dict) -> dict:
        return {"args": codec.encode(list(args)), "kwargs": codec.encode(kwargs)}

    def decode_input(self, stored: dict) -> tuple[list, dict]:
        hints = dict(self._param_hints)
        positional = [hint for _, hint in self._param_hints]
        args = [
            codec.decode(value, positional[i] if i < len(positional) else None)
            for i, value in enumerate(stored.get("args", []))
        ]
        kwargs = {
            key: codec.decode(value, hints.get(key))
            for key, value in stored.get("kwargs", {}).items()
        }
        # A signature that no longer takes these arguments blocks the run (repairable), rather
        # than failing it with a TypeError from the body's first line.
        inspect.signature(self.fn).bind(*args, **kwargs)
        return args, kwargs


_definitions: dict[str, dict[int, WorkflowDefinition]] = {}


def register(definition: WorkflowDefinition, *, replace: bool = False) -> WorkflowDefinition:
    versions = _definitions.setdefault(definition.name, {})
    existing = versions.get(definition.version)
    if existing and not replace and existing.source != definition.source:
        raise ValueError(
            f"workflow {definition.name!r} version {definition.version} is already registered "
            f"by {existing.source}; give the new code a new version"
        )
    versions[definition.version] = definition
    return definition


def unregister(name: str, version: int) -> None:
    _definitions.get(name, {}).pop(version, None)


def get(name: str, version: int | None = None) -> WorkflowDefinition:
    versions = _definitions.get(name)
    if not versions:
        raise WorkflowNotFound(f"no workflow named {name!r} is registered")
    if version is None:
        return versions[max(versions)]
    try:
        return versions[version]
    except KeyError:
        raise WorkflowNotFound(
            f"workflow {name!r} has no version {version} (registered: {sorted(versions)})"
        ) from None


def resolve(workflow) -> WorkflowDefinition:
    """A decorated function, a definition, or a registered name -> its latest definition."""
    if isinstance(workflow, WorkflowDefinition):
        return workflow
    if isinstance(workflow, str):
        return get(workflow)
    definition = getattr(workflow, "durable_definition", None)
    if definition is None:
        raise WorkflowNotFound(f"{workflow!r} is not a @workflow function")
    return definition


def all_definitions() -> list[WorkflowDefinition]:
    return [d for versions in _definitions.values() for d in versions.values()]


# Signal dedupe key prefixes an app keeps for itself (prefix -> owner): a key under one is
# refused to every other sender, so nobody can pre-empt, say, a reviewer's decision.
_dedupe_prefixes: dict[str, str] = {}


def reserve_dedupe_prefix(prefix: str, *, owner: str) -> None:
    """Keep signal dedupe keys starting with ``prefix`` for ``owner`` (call it from the
    owning app's ``AppConfig.ready()``); ``signal_send(..., reserved_by=owner)`` may use them."""
    if not prefix or not owner:
        raise ValueError("a reserved dedupe prefix needs a prefix and an owner")
    for reserved, holder in _dedupe_prefixes.items():
        if holder != owner and (reserved.startswith(prefix) or prefix.startswith(reserved)):
            raise ValueError(
                f"dedupe prefix {prefix!r} overlaps {reserved!r}, reserved by {holder!r}"
            )
    _dedupe_prefixes[prefix] = owner


def release_dedupe_prefix(prefix: str) -> None:
    _dedupe_prefixes.pop(prefix, None)


def dedupe_reservation(key: str) -> tuple[str, str] | None:
    """``(prefix, owner)`` of the reservation ``key`` falls under, or None."""
    for prefix, owner in _dedupe_prefixes.items():
        if key.startswith(prefix):
            return prefix, owner
    return None
