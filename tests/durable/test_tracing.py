"""The engine's spans: a run started, a signal sent, each advance and each step it runs,
named by the run's and the signal's ids; none at all while no OpenTelemetry provider is
installed, and the engine runs the same without OpenTelemetry."""

import pytest
from opentelemetry import trace

from durable import Retry, services, workflow
from durable.models import RunStatus, Signal
from durable.runtime import tracing
from durable.testing import drive, override_workflow

pytestmark = pytest.mark.django_db


def named(spans, name: str) -> list:
    return [span for span in spans.get_finished_spans() if span.name == name]


def test_a_step_replayed_is_not_a_span_again(spans):
    run = services.run_start("step_wait_step", id="traced:1", actor="test")
    drive(run.id)
    services.signal_send(run.id, "go", {"value": 1}, actor="test")

    drive(run.id)

    steps = named(spans, "durable.step")
    assert [
        (s.attributes["durable.step.name"], s.attributes["durable.step.position"]) for s in steps
    ] == [
        ("record", 0),
        ("record", 2),
    ]
    assert {s.attributes["durable.step.attempt"] for s in steps} == {1}


def test_the_advance_a_signal_dispatches_after_the_commit_is_its_child(
    spans, settings, django_capture_on_commit_callbacks
):
    settings.DURABLE_DISPATCHER = "inline"
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start("step_wait_step", id="traced:2", actor="test")

    with django_capture_on_commit_callbacks(execute=True):
        services.signal_send(run.id, "go", {"value": 1}, dedupe_key="go-1", actor="test")

    [started] = named(spans, "durable.run_start")
    [sent] = named(spans, "durable.signal_send")
    first, second = named(spans, "durable.advance")
    signal = Signal.objects.get(run_id=run.id, dedupe_key="go-1")
    assert first.parent.span_id == started.context.span_id
    assert second.parent.span_id == sent.context.span_id
    assert sent.attributes["durable.signal_id"] == signal.pk
    assert sent.attributes["durable.signal_name"] == "go"
    assert second.attributes["durable.run_id"] == run.id
    assert second.attributes["durable.workflow"] == "step_wait_step"
    assert second.attributes["durable.outcome"] == "completed"


def test_without_a_provider_a_run_completes_and_no_span_is_made():
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)

    run = services.run_start("three_steps", 1, id="untraced:1", actor="test")
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    with tracing.span("durable.step") as span:
        assert span is None


def test_without_opentelemetry_installed_a_run_completes(monkeypatch):
    monkeypatch.setattr(tracing, "trace", None)  # as when the import failed

    run = services.run_start("three_steps", 1, id="untraced:2", actor="test")
    services.signal_send(run.id, "unused", actor="test")
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == 4


def failing_with_a_customers_data():
    raise ValueError("CPF 123.456.789-09 refused")


def test_a_step_that_fails_ends_its_span_in_error_by_type_never_by_message(spans):
    def body():
        workflow.step(failing_with_a_customers_data, name="check", retry=Retry(max_attempts=1))

    with override_workflow(body, name="traced_failure"):
        run = services.run_start("traced_failure", id="traced:3", actor="test")
        drive(run.id)

    [step] = named(spans, "durable.step")
    assert step.status.status_code == trace.StatusCode.ERROR
    assert step.status.description == "ValueError"
    assert step.attributes["exception.type"] == "ValueError"
    shown = repr([step.status, step.events, step.attributes])
    assert "123.456.789-09" not in shown
