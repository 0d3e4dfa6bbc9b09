"""The onboarding example of DESIGN.md, with fake steps, runs to completion under the driver."""

import pytest

from durable import days, services, workflow
from durable.models import RunStatus
from durable.testing import drive
from tests.durable.workflows import CALLS, effect, validate

pytestmark = pytest.mark.django_db

SENT: list = []


def send_whatsapp(customer_id: str, missing: list, idempotency_key: str) -> str:
    effect("send_whatsapp")
    SENT.append((customer_id, tuple(missing), idempotency_key))
    return idempotency_key


def close_case(customer_id: str, reason: str) -> None:
    effect("close_case")


def create_account(customer_id: str, idempotency_key: str) -> str:
    effect("create_account")
    return f"acct-{customer_id}"


@workflow(name="example_onboarding")
def onboarding(customer_id: str) -> str:
    docs = workflow.wait_for_signal("documents_received", timeout=days(7))
    if docs is None:
        workflow.step(close_case, customer_id, reason="no documents")
        return "expired"
    result = workflow.step(validate, docs["kinds"])
    n = 0
    while not result.ok:
        n += 1
        workflow.step(
            send_whatsapp, customer_id, result.missing, idempotency_key=f"{workflow.id}:ask:{n}"
        )
        docs = workflow.wait_for_signal("documents_received", timeout=days(7))
        if docs is None:
            workflow.step(close_case, customer_id, reason="documents never completed")
            return "expired"
        result = workflow.step(validate, docs["kinds"])
    decision = workflow.wait_for_signal("compliance_decision", timeout=days(3))
    if decision and decision.approved:
        return workflow.step(create_account, customer_id, idempotency_key=workflow.id)
    return "rejected"


@pytest.fixture(autouse=True)
def _clear_sent():
    SENT.clear()


def test_onboarding_asks_twice_for_missing_documents_then_opens_the_account(clock):
    run = services.run_start(onboarding, "c-42", id="onboarding:c-42", actor="test")
    assert drive(run.id).waiting_for == "signal:documents_received"

    services.signal_send(
        run.id, "documents_received", {"kinds": ["articles"]}, dedupe_key="m1", actor="test"
    )
    drive(run.id)
    clock.advance(days(2))
    services.signal_send(
        run.id,
        "documents_received",
        {"kinds": ["articles", "address"]},
        dedupe_key="m2",
        actor="test",
    )
    drive(run.id)
    services.signal_send(
        run.id,
        "documents_received",
        {"kinds": ["articles", "address", "selfie"]},
        dedupe_key="m3",
        actor="test",
    )
    run = drive(run.id)
    assert run.waiting_for == "signal:compliance_decision"
    services.signal_send(
        run.id, "compliance_decision", {"approved": True, "by": "ana"}, actor="test"
    )
    run = drive(run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.result == "acct-c-42"
    assert SENT == [
        ("c-42", ("address", "selfie"), "onboarding:c-42:ask:1"),
        ("c-42", ("selfie",), "onboarding:c-42:ask:2"),
    ]
    assert (CALLS["validate"], CALLS["send_whatsapp"], CALLS["create_account"]) == (3, 2, 1)


def test_onboarding_closes_the_case_when_no_documents_arrive_in_seven_days(clock):
    run = services.run_start(onboarding, "c-7", id="onboarding:c-7", actor="test")
    drive(run.id)

    clock.advance(days(7))
    run = drive(run.id)

    assert run.result == "expired"
    assert CALLS["close_case"] == 1
