"""One WhatsApp delivery is one trace: the webhook that stored it, the worker's intake, the
signal it became, the run's advance and the steps that advance ran, linked through the
Celery messages' headers and named by the run's and the signal's ids."""

import pytest
from celery.contrib.testing.worker import start_worker
from celery.signals import setup_logging

from config.celery import app as celery_app
from durable.models import Signal
from durable.runtime.publisher import publisher
from durable.testing import drive
from processes.onboarding.models import Company
from processes.webhooks.models import WebhookDelivery
from tests.processes.conftest import ADDRESS, CONTRACT, HELLO, PHONE, SELFIE, whatsapp_webhook
from tests.workers import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def waiting_for_documents(signed_post):
    """A company that said hello: its onboarding run waits for its documents."""
    assert signed_post(whatsapp_webhook(HELLO)).status_code == 200
    run_id = Company.objects.get(wa_id=PHONE).run_id
    drive(run_id)
    return run_id


def logging_left_as_django_set_it(**kwargs):
    """A receiver of Celery's setup_logging: with one, Celery leaves logging alone."""


@pytest.fixture
def worker(settings, monkeypatch):
    """A Celery worker in this process, on the configured broker: tasks travel as messages,
    their headers included, and run in the worker's thread. It leaves the process as it found
    it: Celery's own logging setup (the root logger at ERROR) would silence the later tests'
    warnings, and a worker sends its advances in line (durable/runtime/publisher.py)."""
    settings.DURABLE_DISPATCHER = "celery"
    settings.WHATSAPP_INTAKE = "celery"
    monkeypatch.setattr(publisher, "in_line", publisher.in_line)  # restored after the test
    celery_app.control.purge()
    setup_logging.connect(logging_left_as_django_set_it)
    try:
        with start_worker(celery_app, pool="solo", perform_ping_check=False, shutdown_timeout=30):
            yield
    finally:
        setup_logging.disconnect(logging_left_as_django_set_it)


def by_name(finished, name: str) -> list:
    return [span for span in finished if span.name == name]


def test_a_delivery_is_one_trace_from_the_webhook_to_the_steps_it_ran(
    waiting_for_documents, spans, worker, signed_post, settings
):
    run_id = waiting_for_documents
    settings.ONBOARDING_DOCUMENTS_QUIET_SECONDS = 0  # the batch closes at once: its steps run

    assert signed_post(whatsapp_webhook(CONTRACT)).status_code == 200
    wait_until(
        lambda: any(
            span.attributes.get("durable.run_id") == run_id
            for span in by_name(spans.get_finished_spans(), "durable.advance")
        ),
        timeout=60,
        message="the worker to advance the run the document signalled",
    )

    finished = spans.get_finished_spans()
    [webhook] = by_name(finished, "whatsapp.webhook")
    [intake] = by_name(finished, "whatsapp.intake")
    [signal_span] = by_name(finished, "durable.signal_send")
    [advance] = by_name(finished, "durable.advance")
    steps = by_name(finished, "durable.step")
    delivery = WebhookDelivery.objects.latest("id")
    signal = Signal.objects.get(run_id=run_id, name=signal_span.attributes["durable.signal_name"])
    assert {span.context.trace_id for span in [webhook, intake, signal_span, advance, *steps]} == {
        webhook.context.trace_id
    }
    assert intake.parent.span_id == webhook.context.span_id
    assert signal_span.parent.span_id == intake.context.span_id
    assert advance.parent.span_id == signal_span.context.span_id
    assert steps and {step.parent.span_id for step in steps} == {advance.context.span_id}
    assert webhook.attributes["whatsapp.delivery_id"] == delivery.pk
    assert webhook.attributes["whatsapp.message_count"] == 1
    assert intake.attributes["whatsapp.delivery_id"] == delivery.pk
    assert signal_span.attributes["durable.run_id"] == run_id
    assert signal_span.attributes["durable.signal_id"] == signal.pk
    assert advance.attributes["durable.run_id"] == run_id
    assert advance.attributes["durable.workflow"] == "onboarding"
    assert {step.attributes["durable.run_id"] for step in steps} == {run_id}


def test_several_documents_in_one_delivery_are_one_trace_with_a_signal_each(
    waiting_for_documents, spans, worker, signed_post, settings
):
    run_id = waiting_for_documents
    settings.ONBOARDING_DOCUMENTS_QUIET_SECONDS = 0
    before = set(Signal.objects.filter(run_id=run_id).values_list("pk", flat=True))

    assert signed_post(whatsapp_webhook(CONTRACT, ADDRESS, SELFIE)).status_code == 200
    wait_until(
        lambda: (
            len(by_name(spans.get_finished_spans(), "durable.signal_send")) >= 3
            and by_name(spans.get_finished_spans(), "durable.advance")
        ),
        timeout=60,
        message="the intake to signal the three documents and the run to advance",
    )

    finished = spans.get_finished_spans()
    [webhook] = by_name(finished, "whatsapp.webhook")
    [intake] = by_name(finished, "whatsapp.intake")
    sent = by_name(finished, "durable.signal_send")
    signals = set(Signal.objects.filter(run_id=run_id).values_list("pk", flat=True)) - before
    assert webhook.attributes["whatsapp.message_count"] == 3
    assert intake.attributes["whatsapp.new_message_count"] == 3
    assert {span.attributes["durable.signal_id"] for span in sent} == signals
    assert len(signals) == 3
    assert {span.parent.span_id for span in sent} == {intake.context.span_id}
    assert {span.context.trace_id for span in finished} == {webhook.context.trace_id}
