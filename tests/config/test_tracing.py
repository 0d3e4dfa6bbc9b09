"""The SDK is set up from the standard OTEL_* variables, and only when they name an exporter:
by default nothing is installed and every span stays a no-op."""

import subprocess
import sys

import pytest
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from config import tracing
from tests.support import ROOT, subprocess_env

PROVIDER_OF_THE_WEB_PROCESS = (
    "import config.wsgi; from opentelemetry import trace; "
    "print(type(trace.get_tracer_provider()).__name__)"
)


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"OTEL_TRACES_EXPORTER": "none"},
        {"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"},
    ],
)
def test_without_an_exporter_no_provider_is_made(environ):
    assert tracing.provider_from_environment(environ, service="durable-web") is None


def test_an_exporter_is_found_by_its_entry_point_name_behind_a_batch_processor():
    provider = tracing.provider_from_environment(
        {"OTEL_TRACES_EXPORTER": "console"}, service="durable-web"
    )

    [processor] = provider._active_span_processor._span_processors
    assert type(processor).__name__ == "BatchSpanProcessor"
    assert isinstance(processor._batch_processor._exporter, ConsoleSpanExporter)
    provider.shutdown()


def test_an_exporter_no_package_provides_is_refused_by_name():
    with pytest.raises(tracing.UnknownExporter, match="'otlp'.*opentelemetry-exporter-otlp"):
        tracing.provider_from_environment({"OTEL_TRACES_EXPORTER": "otlp"}, service="x")


def test_the_service_is_named_by_the_process_unless_otel_service_name_says(monkeypatch):
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
    chosen = {"OTEL_TRACES_EXPORTER": "console"}
    default = tracing.provider_from_environment(chosen, service="durable-worker")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "onboarding-worker")

    named = tracing.provider_from_environment(chosen, service="durable-worker")

    assert default.resource.attributes["service.name"] == "durable-worker"
    assert named.resource.attributes["service.name"] == "onboarding-worker"
    default.shutdown()
    named.shutdown()


@pytest.mark.parametrize(
    "exporter, provider",
    [("", "ProxyTracerProvider"), ("none", "ProxyTracerProvider"), ("console", "TracerProvider")],
)
def test_the_web_process_installs_a_provider_only_when_an_exporter_is_named(exporter, provider):
    done = subprocess.run(
        [sys.executable, "-c", PROVIDER_OF_THE_WEB_PROCESS],
        cwd=ROOT,
        env=subprocess_env(OTEL_TRACES_EXPORTER=exporter),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == provider


# The web process as gunicorn loads it, a span open as the webhook's would be, and a task
# sent by name as the webhook sends the intake: what headers leave with the message?
HEADERS_THE_WEB_PROCESS_SENDS = """
import config.wsgi
from celery.signals import before_task_publish
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

sent = {}
before_task_publish.connect(lambda headers=None, **kw: sent.update(headers or {}), weak=False)
trace.set_tracer_provider(TracerProvider())
from config.celery import app
with trace.get_tracer("test").start_as_current_span("whatsapp.webhook"):
    app.send_task("durable.test_no_such_task", queue="tracing-test-nobody-consumes")
print("traceparent" in sent)
"""


def test_the_web_process_sends_its_trace_with_a_task_it_never_imported(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", HEADERS_THE_WEB_PROCESS_SENDS],
        cwd=ROOT,
        # Kombu's in-memory transport: the message is published, to no broker a test shares.
        env=subprocess_env(DURABLE_VAR_DIR=str(tmp_path), CELERY_BROKER_URL="memory://"),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "True"
