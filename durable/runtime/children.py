"""The names a child run's outcome travels under to its parent.

A child's outcome reaches its parent as a signal (name ``durable.child:<id>``, a dedupe
key under a prefix reserved for the engine), written in the transaction that finishes the
child (``durable.runtime.store.live.notify_parent``): the parent never misses it, and a redelivered
finish cannot tell it twice.
"""

import hashlib

from durable.runtime import registry

SIGNAL_PREFIX = "durable.child:"
DEDUPE_PREFIX = "durable:child:"
OWNER = "durable"


def _bounded(prefix: str, child_id: str) -> str:
    """``prefix + child_id`` within the 255 characters a signal's name and key may hold."""
    text = prefix + child_id
    if len(text) <= 255:
        return text
    return f"{prefix}{child_id[:180]}~{hashlib.sha256(child_id.encode()).hexdigest()[:32]}"


def signal_name(child_id: str) -> str:
    return _bounded(SIGNAL_PREFIX, child_id)


def dedupe_key(child_id: str) -> str:
    return _bounded(DEDUPE_PREFIX, child_id)


def reserve() -> None:
    """Only the engine writes children's outcomes (called from the app's ready())."""
    registry.reserve_dedupe_prefix(DEDUPE_PREFIX, owner=OWNER)
