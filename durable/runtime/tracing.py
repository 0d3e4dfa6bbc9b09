"""The engine's OpenTelemetry spans, and the trace context its messages carry.

OpenTelemetry is optional (``pip install "django-durable-flows[otel]"``): without its API
every span here is a no-op, and so it is while no SDK provider is installed (the host
project installs one). A step is the hot path: no span object is made for it then.
"""

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager

try:
    from opentelemetry import context as otel_context
    from opentelemetry import propagate, trace
except ImportError:  # the engine runs without OpenTelemetry
    trace = None

SCOPE = "durable"
# The W3C names (traceparent, tracestate, baggage) the default propagators read and write.
_CARRIED: tuple[str, ...] = ("traceparent", "tracestate", "baggage")

_tracers: dict[object, object] = {}


def _tracer():
    """The engine's tracer from the installed provider, or None while none is installed: the
    proxy provider's spans are no-ops, not worth the objects they cost."""
    if trace is None:
        return None
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider):
        return None
    tracer = _tracers.get(provider)
    if tracer is None:
        tracer = _tracers.setdefault(provider, provider.get_tracer(SCOPE))
    return tracer


class _NoSpan:
    """What ``span`` returns while tracing is off: enters as None, records nothing."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info) -> bool:
        return False


_NO_SPAN = _NoSpan()


def span(name: str, attributes: dict | None = None) -> ContextManager:
    """A span around a ``with`` block, current inside it, entered as None when tracing is
    off. An exception leaving the block ends the span in error, named by its type only."""
    tracer = _tracer()
    if tracer is None:
        return _NO_SPAN
    return _erring_by_type(tracer, name, attributes)


@contextlib.contextmanager
def _erring_by_type(tracer, name: str, attributes: dict | None):
    # Not the exception's message nor its stack: they may carry a customer's data, and a
    # trace leaves for a backend that the logs' scrubber (config/log_filters.py) never sees.
    with tracer.start_as_current_span(
        name, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as current:
        try:
            yield current
        except Exception as error:
            failed(error)
            raise


def recording() -> bool:
    """A span is current and records: worth computing what ``note`` would add."""
    return trace is not None and trace.get_current_span().is_recording()


def note(attributes: dict) -> None:
    """Add attributes to the current span (what is learnt once the span began)."""
    if recording():
        trace.get_current_span().set_attributes(attributes)


def failed(error: BaseException) -> None:
    """End the current span in error, saying the exception's type and nothing of its text
    (for an error caught inside the span, as one that leaves it already is)."""
    if recording():
        current = trace.get_current_span()
        current.set_attribute("exception.type", type(error).__qualname__)
        current.set_status(trace.StatusCode.ERROR, type(error).__name__)


def carried(send: Callable[[], None]) -> Callable[[], None]:
    """``send`` to be called later (after the commit), in the trace current now: the span
    that caused a message stays its parent once that span has ended. ``send`` itself when
    there is no trace to carry."""
    if trace is None:
        return send
    captured = otel_context.get_current()
    if not trace.get_current_span(captured).get_span_context().is_valid:
        return send

    def send_in_trace() -> None:
        token = otel_context.attach(captured)
        try:
            send()
        finally:
            otel_context.detach(token)

    return send_in_trace


def inject(headers: dict) -> None:
    """Write the current trace context into a message's headers."""
    if trace is not None:
        propagate.inject(headers)


def attach_from(request) -> object | None:
    """Make the trace context a message carried the current one; a token for ``detach``,
    None when it carried none. ``request``: Celery's task request, where custom message
    headers are attributes (task protocol 2) or, on some versions, items of ``.headers``."""
    if trace is None:
        return None
    headers = getattr(request, "headers", None) or {}
    carrier = {}
    for key in _CARRIED:
        value = getattr(request, key, None) or headers.get(key)
        if value:
            carrier[key] = value
    if "traceparent" not in carrier:
        return None
    return otel_context.attach(propagate.extract(carrier))


def detach(token) -> None:
    if token is not None:
        otel_context.detach(token)
