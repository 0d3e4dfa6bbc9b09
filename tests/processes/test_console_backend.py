"""The console backend, the development default: a message to a customer is an INFO log line."""

import logging

import pytest

from processes.onboarding.models import Company
from processes.onboarding.services import onboarding_start
from processes.whatsapp.backends import ConsoleBackend, Outgoing
from tests.workers import celery_processes, wait_until


def test_a_message_to_a_customer_is_logged_at_info_by_the_whatsapp_logger(caplog):
    outgoing = Outgoing(to_wa_id="5511900000001", to_user_id="", body="Conta PJ aberta.")

    with caplog.at_level(logging.INFO, logger="processes.whatsapp.backends"):
        ConsoleBackend().send(outgoing, idempotency_key="welcome:1")

    [record] = caplog.records
    assert (record.name, record.levelname) == ("processes.whatsapp.backends", "INFO")
    assert record.getMessage() == "[whatsapp -> 5511900000001] (text) Conta PJ aberta."


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.integration
@pytest.mark.django_db(transaction=True)
def test_a_worker_logs_the_greeting_at_info_without_redirected_output_or_broker_warnings(
    tmp_path, settings
):
    settings.DURABLE_DISPATCHER = "celery"
    company = Company.objects.create(wa_id="5511900000077", name="Padaria Log")
    worker_log = tmp_path / "worker.log"

    with celery_processes(tmp_path) as celery:
        celery.start_worker()
        onboarding_start(company, actor="test")
        wait_until(
            lambda: "[whatsapp -> 5511900000077]" in worker_log.read_text(errors="replace"),
            timeout=60,
            message="the greeting in the worker's log",
        )
    log = worker_log.read_text(errors="replace")

    [greeting] = [line for line in log.splitlines() if "[whatsapp -> 5511900000077]" in line]
    assert " INFO processes.whatsapp.backends " in greeting
    assert "celery.redirected" not in log
    assert "No hostname was supplied" not in log
