"""JSON codec of journal values: what a step returns is what the body sees, live or replayed.

``encode`` turns dataclasses, datetimes, decimals, UUIDs, enums, sets and tuples into
JSON. ``decode`` rebuilds typed values from a type hint (a step's return annotation, a
signal's declared type); without a hint, objects come back as ``AttrDict`` so both
``result["ok"]`` and ``result.ok`` read. No class is ever imported by a name found in
the data: payloads from webhooks go through this code too.
"""

import dataclasses
import datetime as dt
import decimal
import enum
import functools
import json
import types
import typing
import uuid

from durable.errors import PayloadError


class AttrDict(dict):
    """A dict whose keys also read as attributes (``decision.approved``)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def __setattr__(self, name, value):
        self[name] = value

    def __delattr__(self, name):
        try:
            del self[name]
        except KeyError:
            raise AttributeError(name) from None


def encode(value):
    """Return a JSON-native copy of ``value``; raise PayloadError for what JSON cannot hold."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise PayloadError(f"{value!r} is not valid JSON")
        return value
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        encoded = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise PayloadError(f"dict keys must be strings, got {key!r}")
            encoded[key] = encode(item)
        return encoded
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [encode(item) for item in items]
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (decimal.Decimal, uuid.UUID)):
        return str(value)
    raise PayloadError(f"cannot store a {type(value).__name__} in the journal: {value!r:.80}")


def dumps(value) -> str:
    try:
        return json.dumps(encode(value), separators=(",", ":"), ensure_ascii=False)
    except RecursionError:
        raise PayloadError("the value is nested too deep to store") from None


def roundtrip(value, hint=None):
    """What a replay would see: encode, serialise, parse, decode."""
    return decode(json.loads(dumps(value)), hint)


def decode(value, hint=None):
    """Rebuild ``value`` (JSON-native) as ``hint`` says, or as AttrDicts and lists."""
    if hint is None or hint is typing.Any:
        return _plain(value)
    if value is None:
        return None
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        for option in options:
            try:
                return decode(value, option)
            except (TypeError, ValueError, KeyError):
                continue
        return _plain(value)
    if origin in (list, tuple, set, frozenset) or hint in (list, tuple, set, frozenset):
        args = typing.get_args(hint)
        container = origin or hint
        if container is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
            return tuple(decode(item, arg) for item, arg in zip(value, args))
        item_hint = args[0] if args else None
        return container(decode(item, item_hint) for item in value)
    if origin is dict or hint is dict:
        args = typing.get_args(hint)
        item_hint = args[1] if len(args) == 2 else None
        return AttrDict({key: decode(item, item_hint) for key, item in value.items()})
    if isinstance(hint, type):
        if dataclasses.is_dataclass(hint):
            return _dataclass(value, hint)
        if issubclass(hint, enum.Enum):
            return hint(value)
        if hint is dt.datetime:
            return dt.datetime.fromisoformat(value)
        if hint is dt.date:
            return dt.date.fromisoformat(value)
        if hint is dt.timedelta:
            return dt.timedelta(seconds=value)
        if hint in (decimal.Decimal, uuid.UUID):
            return hint(value)
        if hint is float and isinstance(value, int):
            return float(value)
    return _plain(value)


def _plain(value):
    if isinstance(value, dict):
        return AttrDict({key: _plain(item) for key, item in value.items()})
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


_hints_cache: dict[type, dict] = {}


def _dataclass(value, cls):
    if not isinstance(value, dict):
        raise TypeError(f"expected an object for {cls.__name__}, got {value!r:.80}")
    hints = _hints_cache.get(cls)
    if hints is None:
        hints = _hints_cache[cls] = typing.get_type_hints(cls)
    kwargs = {}
    for f in dataclasses.fields(cls):
        if f.name in value and f.init:
            kwargs[f.name] = decode(value[f.name], hints.get(f.name))
    return cls(**kwargs)


@functools.lru_cache(maxsize=4096)
def return_hint(fn):
    """The return annotation of a step function, or None (cached: read at every step)."""
    try:
        hint = typing.get_type_hints(fn).get("return")
    except Exception:  # unresolvable forward references: fall back to plain values
        return None
    return None if hint is type(None) else hint


def canonical(value) -> str:
    """JSON text of an encoded value that tells true from 1 and ignores key order: two
    payloads are the same signal only if these are equal."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
