"""The new waits and graceful cancel on a real Celery worker and beat."""

import time

import pytest
from django.db import transaction

from durable import services
from durable.models import RunStatus, WorkflowRun
from tests.effects.models import Once
from tests.workers import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
]


def finished(run_id: str) -> WorkflowRun:
    wait_until(
        lambda: WorkflowRun.objects.get(pk=run_id).is_finished,
        timeout=60,
        message=f"{run_id} to end",
    )
    return WorkflowRun.objects.get(pk=run_id)


def waiting(run_id: str) -> None:
    wait_until(
        lambda: WorkflowRun.objects.get(pk=run_id).status == RunStatus.WAITING,
        timeout=60,
        message=f"{run_id} to wait",
    )


def test_wait_for_any_on_a_worker_resumes_with_the_signal_that_came(celery):
    celery.start_worker()
    run = services.run_start("paid_or_voided", id="workers:any", actor="test")
    waiting(run.id)

    services.signal_send(run.id, "paid", {"amount": 42}, actor="test")

    assert finished(run.id).result == {"name": "paid", "amount": 42}


def test_drain_on_a_worker_takes_what_was_sent_with_the_start(celery):
    celery.start_worker()
    with transaction.atomic():
        run = services.run_start("drain_then_wait", id="workers:drain", actor="test")
        for n in (1, 2, 3):
            services.signal_send(run.id, "item", {"n": n}, actor="test")
    waiting(run.id)

    services.signal_send(run.id, "item", {"n": 4}, actor="test")

    assert finished(run.id).result == {"early": [1, 2, 3], "later": 4}


def test_collect_on_a_worker_makes_one_batch_of_what_came_together(celery):
    celery.start_worker()
    celery.start_beat()
    run = services.run_start("quick_batches", id="workers:collect", actor="test")
    waiting(run.id)

    services.signal_send(run.id, "doc", {"n": 1}, actor="test")
    time.sleep(0.3)
    services.signal_send(run.id, "doc", {"n": 2}, actor="test")
    time.sleep(3.0)  # quiet for longer than 1.5 s: the first batch closes
    services.signal_send(run.id, "doc", {"n": 3}, actor="test")

    assert finished(run.id).result == [[1, 2], [3]]


def test_a_graceful_cancel_whose_cleanup_kills_its_worker_still_cleans_up_once(celery, tmp_path):
    markers = tmp_path / "cleanup-markers"
    markers.mkdir()
    celery.env["CLEANUP_MARKERS"] = str(markers)
    celery.start_worker()
    celery.start_beat()
    run = services.run_start("cleanup_survives_a_kill", "c-9", id="workers:cancel", actor="test")
    waiting(run.id)

    services.run_cancel(run.id, reason="customer withdrew", graceful=True, actor="test")
    run = finished(run.id)

    assert run.status == RunStatus.CANCELLED
    assert len(list(markers.iterdir())) == 1, "the first cleanup attempt did not kill its worker"
    assert Once.objects.filter(key=f"{run.id}:bye").count() == 1


def test_on_a_worker_attributes_find_the_run_and_a_conflicting_redelivery_changes_nothing(
    celery, client
):
    from django.contrib.auth.models import Permission, User

    from durable import SignalConflict

    celery.start_worker()
    for cnpj in ("11.222.333/0001-81", "22.333.444/0001-90", "33.444.555/0001-09"):
        services.run_start("staged", cnpj, id=f"workers:staged:{cnpj[:2]}", actor="test")
    for run_id in WorkflowRun.objects.filter(workflow_name="staged").values_list("id", flat=True):
        waiting(run_id)
    user = User.objects.create_user("viewer", password="pw-unused-123")
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    client.force_login(user)

    found = client.get("/api/runs/", {"attr.cnpj": "22.333.444/0001-90"}).json()["results"]
    assert [r["id"] for r in found] == ["workers:staged:22"]
    services.signal_send(
        "workers:staged:22", "documents", {"kind": "contrato"}, dedupe_key="wamid.7", actor="test"
    )
    with pytest.raises(SignalConflict):
        services.signal_send(
            "workers:staged:22", "documents", {"kind": "selfie"}, dedupe_key="wamid.7", actor="test"
        )

    assert finished("workers:staged:22").result == "contrato"
    in_review = client.get("/api/runs/", {"attr.stage": "in review"}).json()["results"]
    assert [r["id"] for r in in_review] == ["workers:staged:22"]
