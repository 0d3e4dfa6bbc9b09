"""Onboarding publishes its human status and the company's CNPJ, so operators can find a run."""

import pytest
from django.contrib.auth.models import Permission, User

from durable.models import WorkflowRun
from tests.processes.conftest import ADDRESS, CNPJ, CONTRACT, HELLO
from tests.processes.test_onboarding import decide

pytestmark = pytest.mark.django_db


def attributes(run_id: str) -> dict:
    return WorkflowRun.objects.get(pk=run_id).attributes


def test_a_new_customer_is_awaiting_documents(customer):
    run = customer(HELLO)

    assert attributes(run.id)["stage"] == "awaiting documents"


def test_the_one_document_still_missing_is_the_stage(customer):
    customer(HELLO)
    customer(CONTRACT)
    run = customer(ADDRESS)

    assert attributes(run.id)["stage"].startswith("awaiting selfie")


def test_a_case_in_review_carries_the_companys_cnpj_and_the_api_finds_it(in_review, client):
    viewer = User.objects.create_user("viewer", password="pw-unused-123")
    viewer.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    client.force_login(viewer)

    found = client.get("/api/runs/", {"attr.cnpj": CNPJ}).json()["results"]

    assert attributes(in_review.id)["stage"] == "in review"
    assert [run["id"] for run in found] == [in_review.id]


def test_an_approved_onboarding_says_so_with_its_account(in_review, ana):
    run = decide(ana, in_review.id, "approve")

    assert attributes(run.id)["stage"] == "approved"
    assert attributes(run.id)["account"] == run.result
