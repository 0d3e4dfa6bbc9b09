"""Strict mode: calls that break replay raise when a workflow body makes them (tests, development).

``install()`` (once, from the app's ready() when ``DURABLE_STRICT`` is on: tests turn it
on; elsewhere it takes an explicit ``DURABLE_STRICT=1``, since it patches the standard
library for the whole process) wraps the clock, random, UUID and secrets functions and adds
an audit hook for files, sockets, urllib and subprocesses, and a database execute wrapper.
Each guard first asks one context variable whether a workflow body is running (a run's
replay context is set and no step is): anywhere else the original function runs unchanged.

What Django sees of models must not change: ``django.utils.timezone.now`` is a model field
default, and replacing it would make the migration autodetector see a changed default in
every app. It is left alone; the ``datetime.now`` it calls charges the read to its caller.

Only calls made by project code are refused. The engine (durable/) and libraries read
clocks and open connections for their own purposes (a log record's timestamp, a journal
write), so for clocks and randomness the direct caller decides; for network, files and
queries it is the nearest frame that is not a library's. A line marked ``# durable: allow``
is let through, as in the system check.
"""

import datetime as datetime_module
import functools
import gc
import inspect
import linecache
import os
import random
import secrets
import site
import sys
import sysconfig
import threading
import time
import uuid

from django.conf import settings
from django.db import connections
from django.db.backends.signals import connection_created
from django.utils import timezone

from durable.errors import Divergence
from durable.runtime import current, determinism, registry

CLOCK_FUNCTIONS = {
    time: (
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "perf_counter",
        "perf_counter_ns",
        "process_time",
        "process_time_ns",
    ),
    uuid: ("uuid1", "uuid4"),
    secrets: ("token_bytes", "token_hex", "token_urlsafe", "choice", "randbelow", "randbits"),
    random: (
        "random",
        "randint",
        "randrange",
        "choice",
        "choices",
        "shuffle",
        "sample",
        "uniform",
        "triangular",
        "gauss",
        "normalvariate",
        "lognormvariate",
        "expovariate",
        "vonmisesvariate",
        "gammavariate",
        "betavariate",
        "paretovariate",
        "weibullvariate",
        "getrandbits",
        "randbytes",
    ),
}
AUDITED_EVENTS = {
    "open": determinism.FILES,
    "socket.connect": determinism.NETWORK,
    "socket.getaddrinfo": determinism.NETWORK,
    "socket.gethostbyname": determinism.NETWORK,
    "urllib.Request": determinism.NETWORK,
    "http.client.connect": determinism.NETWORK,
}

_installed = False
_install_lock = threading.Lock()
_frame_kinds: dict[str, str] = {}
_ENGINE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
_LIBRARY_DIRS = tuple(
    sorted(
        {
            os.path.abspath(path) + os.sep
            for path in [
                *(
                    sysconfig.get_paths().get(key)
                    for key in ("stdlib", "platstdlib", "purelib", "platlib")
                ),
                *site.getsitepackages(),
                site.getusersitepackages(),
            ]
            if path
        }
    )
)
ENGINE, LIBRARY, PROJECT = "engine", "library", "project"


class NondeterministicCall(Divergence):
    """A workflow body made a call whose answer changes on replay (strict mode).

    A Divergence, so the body cannot swallow it with ``except Exception`` and the run is
    blocked with this message until the code is fixed and the run retried.
    """

    error_type = "NondeterministicCall"


def enabled() -> bool:
    return bool(getattr(settings, "DURABLE_STRICT", False))


def _frame_kind(filename: str) -> str:
    kind = _frame_kinds.get(filename)
    if kind is None:
        path = os.path.abspath(filename) if not filename.startswith("<") else filename
        if filename.startswith("<"):
            kind = LIBRARY  # frozen importlib, generated code
        elif path.startswith(_ENGINE_DIR):
            kind = ENGINE
        elif path.startswith(_LIBRARY_DIRS):
            kind = LIBRARY
        else:
            kind = PROJECT
        _frame_kinds[filename] = kind
    return kind


_TIMEZONE_NOW_CODE = None


def _in_body() -> bool:
    return current.current() is not None and current.current_step() is None


def _body_codes() -> set:
    return {getattr(d.fn, "__code__", None) for d in registry.all_definitions()}


def _blame(frame):
    """The project frame to blame for a call made in a body, or None when it is not the body's.

    Walks out from ``frame``: reaching the workflow function means the body (or a helper it
    called) made the call; reaching the engine first means the engine did, e.g. a journal
    write, or project code the engine called (a signal receiver, a dataclass being decoded).
    """
    bodies = _body_codes()
    blamed = None
    while frame is not None:
        code = frame.f_code
        kind = _frame_kind(code.co_filename)
        if code.co_filename.startswith("<frozen importlib"):
            return None  # an import reads source files: not the body's doing
        if kind == ENGINE:
            return None
        if kind == PROJECT and blamed is None:
            blamed = frame
        if code in bodies:
            return blamed
        frame = frame.f_back
    return None


def _marked(frame) -> bool:
    """Any line of the call the frame is making carries the marker, as the static check
    reads it: a formatter that splits a call over lines leaves a trailing comment on the
    last one (black and ruff do), not on the line the frame reports."""
    first = last = frame.f_lineno
    positions = inspect.getframeinfo(frame, context=0).positions
    if positions is not None and positions.lineno and positions.end_lineno:
        first, last = positions.lineno, min(positions.end_lineno, positions.lineno + 50)
    filename = frame.f_code.co_filename
    return any(
        determinism.ALLOW_MARKER in linecache.getline(filename, number)
        for number in range(first, last + 1)
    )


def _refuse(call: str, rule: determinism.Rule, frame) -> None:
    """Raise for a call that project code made in a workflow body, unless marked allowed."""
    if not enabled():
        return
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    if _marked(frame):
        return
    ctx = current.current()
    run = getattr(ctx, "run", None)
    label = f"workflow {run.workflow_name!r} v{run.workflow_version}" if run else "a workflow"
    raise NondeterministicCall(
        f"strict mode: {call} {rule.what} in the body of {label} "
        f"({determinism.display_path(filename)}:{line}: {text}); a replay "
        f"would get a different answer. Fix: {rule.fix}. ({rule.id}; mark "
        "the line '# durable: allow' if it is on purpose)"
    )


def _check_direct(call: str, rule: determinism.Rule, caller) -> None:
    if caller.f_code is _TIMEZONE_NOW_CODE:  # the clock read is the caller of timezone.now()
        call, caller = "django.utils.timezone.now()", caller.f_back
    if (
        caller is not None and _frame_kind(caller.f_code.co_filename) == PROJECT
    ):  # libraries read clocks for themselves
        blamed = _blame(caller)
        if blamed is not None:
            _refuse(call, rule, blamed)


def _guard_direct(call: str, rule: determinism.Rule, original):
    @functools.wraps(original)
    def guard(*args, **kwargs):
        if _in_body():
            _check_direct(f"{call}()", rule, sys._getframe(1))
        return original(*args, **kwargs)

    guard.__durable_original__ = original
    return guard


def _patch_type(cls, name: str) -> None:
    """Replace a classmethod of a C type (datetime.now): its dict is reached through gc."""
    import ctypes

    original = cls.__dict__[name]

    def guard(owner, *args, **kwargs):
        if _in_body():
            _check_direct(f"{owner.__name__}.{name}()", determinism.CLOCK, sys._getframe(1))
        return original.__get__(None, owner)(*args, **kwargs)

    guard.__durable_original__ = original
    namespace = gc.get_referents(cls.__dict__)[0]
    namespace[name] = classmethod(guard)
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(cls))


def _audit(event: str, args) -> None:
    rule = AUDITED_EVENTS.get(event)
    if rule is None or not _in_body():
        return
    blamed = _blame(sys._getframe(1))
    if blamed is not None:
        detail = args[0] if args else ""
        _refuse(f"{event}({detail!r:.80})", rule, blamed)


def _refuse_queries(execute, sql, params, many, context):
    if _in_body():
        blamed = _blame(sys._getframe(1))
        if blamed is not None:
            _refuse(f"SQL {sql[:80]!r}", determinism.DATABASE, blamed)
    return execute(sql, params, many, context)


def _add_query_guard(sender=None, connection=None, **kwargs) -> None:
    # First in the list: Django's execute_wrapper() context manager pops the last one.
    if _refuse_queries not in connection.execute_wrappers:
        connection.execute_wrappers.insert(0, _refuse_queries)


def install() -> None:
    """Install the guards once per process (idempotent)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for module, names in CLOCK_FUNCTIONS.items():
            for name in names:
                original = getattr(module, name, None)
                if original is None or hasattr(original, "__durable_original__"):
                    continue
                rule = determinism.rule_for(f"{module.__name__}.{name}") or determinism.CLOCK
                setattr(module, name, _guard_direct(f"{module.__name__}.{name}", rule, original))
        global _TIMEZONE_NOW_CODE
        _TIMEZONE_NOW_CODE = timezone.now.__code__
        for cls, name in (
            (datetime_module.datetime, "now"),
            (datetime_module.datetime, "utcnow"),
            (datetime_module.date, "today"),
        ):
            _patch_type(cls, name)
        sys.addaudithook(_audit)
        connection_created.connect(_add_query_guard, dispatch_uid="durable.runtime.strict")
        for connection in connections.all(initialized_only=True):
            _add_query_guard(connection=connection)
        _installed = True


def installed() -> bool:
    return _installed
