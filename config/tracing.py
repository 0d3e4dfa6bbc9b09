"""The OpenTelemetry SDK of this site's processes, chosen by the standard ``OTEL_*`` variables.

Nothing is installed unless ``OTEL_TRACES_EXPORTER`` names an exporter (and
``OTEL_SDK_DISABLED`` is not true): the spans of the engine and of the WhatsApp channel
then stay no-ops. Exporters are found by their entry point name (``console``; ``otlp``
once ``opentelemetry-exporter-otlp`` is installed), as ``opentelemetry-instrument`` finds
them; each gets a batch processor, so no request or step waits for an export.
"""

import logging
import os
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)

EXPORTERS_GROUP = "opentelemetry_traces_exporter"


class UnknownExporter(ValueError):
    """``OTEL_TRACES_EXPORTER`` names an exporter no installed package provides."""


def exporter_names(environ=os.environ) -> list[str]:
    """The exporters ``OTEL_TRACES_EXPORTER`` asks for; none when tracing is off."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [n.strip() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()]
    return [] if "none" in names else names


def provider_from_environment(environ=os.environ, *, service: str) -> TracerProvider | None:
    """A provider exporting to the exporters ``environ`` names, or None when it names none.
    ``service``: the service's name unless ``OTEL_SERVICE_NAME`` (or
    ``OTEL_RESOURCE_ATTRIBUTES``) gives one; those, the sampler's and the exporters' own
    ``OTEL_*`` settings are read by the SDK from the process's environment."""
    names = exporter_names(environ)
    if not names:
        return None
    resource = Resource.create()
    if str(resource.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        resource = resource.merge(Resource({SERVICE_NAME: service}))
    provider = TracerProvider(resource=resource)
    for name in names:
        provider.add_span_processor(BatchSpanProcessor(_exporter(name)))
    return provider


def _exporter(name: str):
    found = entry_points(group=EXPORTERS_GROUP, name=name)
    if not found:
        installed = sorted(ep.name for ep in entry_points(group=EXPORTERS_GROUP))
        raise UnknownExporter(
            f"OTEL_TRACES_EXPORTER={name!r}: no installed package provides it "
            f"(installed: {', '.join(installed) or 'none'}; otlp comes with "
            f"opentelemetry-exporter-otlp)"
        )
    return next(iter(found)).load()()


def install(*, service: str) -> TracerProvider | None:
    """Install the environment's provider as this process's, once; None when tracing is off."""
    provider = provider_from_environment(service=service)
    if provider is None:
        return None
    trace.set_tracer_provider(provider)
    log.info("traces exported to %s", os.environ["OTEL_TRACES_EXPORTER"])
    return provider


def flush() -> None:
    """Export what is batched (a pool process about to exit skips the at-exit flush)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.force_flush()
