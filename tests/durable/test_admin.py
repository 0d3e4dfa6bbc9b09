"""The runs admin: operators see the journal, signals and divergence, and repair through the
services."""

from zoneinfo import ZoneInfo

import pytest
from django.contrib import admin
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from durable import services, workflow
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.testing import drive, override_workflow
from tests.durable.workflows import record

pytestmark = pytest.mark.django_db


def staff_with(client, *codenames: str, username: str = "ops"):
    user = User.objects.create_user(username, password="pw-unused-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename__in=codenames)
    )
    client.force_login(user)
    return client


@pytest.fixture
def operator(client):
    return staff_with(client, "view_workflowrun", "operate_workflowrun", "view_auditevent")


@pytest.fixture
def viewer(client):
    return staff_with(client, "view_workflowrun", username="viewer")


@pytest.fixture
def waiting_run(clock):
    return drive(services.run_start("step_wait_step", id="onboarding:c-42", actor="test").id)


def page(run_id: str, action: str = "change") -> str:
    return reverse(f"admin:durable_workflowrun_{action}", args=[quote(run_id)])


def a_then_b():
    workflow.step(record, "a", name="a")
    workflow.wait_for_signal("go")
    return "done"


def b_then_a():
    workflow.step(record, "b", name="b")
    workflow.wait_for_signal("go")
    return "done"


@pytest.fixture
def blocked_run(clock):
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id="reorder:admin", actor="test")
        drive(run.id)
    services.signal_send(run.id, "go", {}, actor="test")
    with override_workflow(b_then_a, name="reorder"):
        return drive(run.id)


def stamp(value) -> str:
    """As the admin shows a moment: in São Paulo (the reviewers' zone), dated as the reader
    (English in the tests) writes dates, to the second, with the zone."""
    local = value.astimezone(ZoneInfo("America/Sao_Paulo"))
    return (
        f'<time datetime="{value.isoformat()}">'
        f"{local:%m/%d/%Y %H:%M:%S}\N{NO-BREAK SPACE}-03</time>"
    )


@pytest.fixture
def run_with_deadline(clock):
    return drive(services.run_start("wait_with_deadline", id="onboarding:c-43", actor="test").id)


def test_the_list_shows_wake_and_update_times_to_the_second_with_their_zone(
    operator, run_with_deadline
):
    html = operator.get(reverse("admin:durable_workflowrun_changelist")).content.decode()

    assert stamp(run_with_deadline.wake_at) in html
    assert stamp(run_with_deadline.updated_at) in html


def test_in_portuguese_a_time_reads_as_on_the_reviewer_pages_in_sao_paulo(
    operator, run_with_deadline, settings
):
    settings.LANGUAGE_CODE = "pt-br"
    local = run_with_deadline.wake_at.astimezone(ZoneInfo("America/Sao_Paulo"))

    html = operator.get(page(run_with_deadline.id)).content.decode()

    assert f">{local:%d/%m/%Y %H:%M:%S}\N{NO-BREAK SPACE}-03</time>" in html


def test_the_run_page_shows_its_times_and_its_journal_to_the_second_with_their_zone(
    operator, run_with_deadline
):
    html = operator.get(page(run_with_deadline.id)).content.decode()

    assert stamp(run_with_deadline.created_at) in html and stamp(run_with_deadline.wake_at) in html
    entries = list(run_with_deadline.journal.all())
    assert entries and all(stamp(entry.started_at) in html for entry in entries)


def test_the_list_shows_workflow_version_status_and_what_the_run_waits_for(operator, waiting_run):
    response = operator.get(reverse("admin:durable_workflowrun_changelist"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "onboarding:c-42" in html and "step_wait_step v1" in html
    assert "durable-badge" in html and "signal:<wbr>go" in html  # may wrap after the colon


def test_the_list_filters_by_status_and_searches_by_id(operator, waiting_run):
    services.run_start("three_steps", 1, id="three:admin", actor="test")

    by_status = operator.get(
        reverse("admin:durable_workflowrun_changelist"), {"status__exact": "pending"}
    )
    by_id = operator.get(reverse("admin:durable_workflowrun_changelist"), {"q": "c-42"})

    assert (
        "three:admin" in by_status.content.decode()
        and "onboarding:c-42" not in by_status.content.decode()
    )
    assert (
        "onboarding:c-42" in by_id.content.decode() and "three:admin" not in by_id.content.decode()
    )


def test_the_run_page_shows_the_journal_timeline_and_pending_signals(operator, waiting_run):
    services.signal_send(waiting_run.id, "unrelated", {"note": "kept for later"}, actor="test")

    response = operator.get(page(waiting_run.id))

    html = response.content.decode()
    assert response.status_code == 200
    assert (
        'id="durable-journal"' in html
        and "<code>record</code>" in html
        and "<code>go</code>" in html
    )
    assert "&quot;before&quot;" in html  # the recorded result of the first step
    assert "<strong>pending</strong>" in html and "kept for later" in html


def test_a_blocked_run_shows_its_divergence_message_at_the_top(operator, blocked_run):
    response = operator.get(page(blocked_run.id))

    html = response.content.decode()
    assert blocked_run.status == RunStatus.BLOCKED
    assert "durable-divergence" in html and "journal mismatch at position 0" in html
    assert html.index("durable-divergence") < html.index('id="durable-journal"')


def test_a_graceful_cancel_from_the_run_page_lets_the_workflow_clean_up(operator, clock):
    run = drive(services.run_start("polite_cancel", "Padaria", id="polite:admin", actor="test").id)
    assert 'name="graceful"' in operator.get(page(run.id)).content.decode()

    response = operator.post(
        page(run.id, "cancel"), {"reason": "duplicate", "graceful": "on"}, follow=True
    )
    run = drive(run.id)

    assert "asked to cancel: the workflow cleans up first" in response.content.decode()
    assert (run.status, run.result) == (RunStatus.CANCELLED, "bye: duplicate (ops)")


def test_a_run_that_cannot_run_again_offers_no_graceful_cancel(operator, clock):
    failed = drive(services.run_start("fails_in_body", id="fails:admin-graceful", actor="test").id)

    assert 'name="graceful"' not in operator.get(page(failed.id)).content.decode()


def test_cancel_goes_through_the_service_and_is_audited_with_the_request(operator, waiting_run):
    response = operator.post(
        page(waiting_run.id, "cancel"),
        {"reason": "duplicate case"},
        HTTP_USER_AGENT="ops-browser/1",
    )

    run = WorkflowRun.objects.get(pk=waiting_run.id)
    audit = AuditEvent.objects.get(run=run, action="cancel")
    assert response.status_code == 302
    assert run.status == RunStatus.CANCELLED and run.error["message"] == "duplicate case"
    assert audit.actor == "ops"
    assert audit.detail["via"] == "admin" and audit.detail["user_agent"] == "ops-browser/1"
    assert audit.detail["ip"] == "127.0.0.1" and audit.detail["path"].endswith("/cancel/")


def test_retry_sends_a_blocked_run_back_to_pending(operator, blocked_run):
    operator.post(page(blocked_run.id, "retry"))

    assert WorkflowRun.objects.get(pk=blocked_run.id).status == RunStatus.PENDING
    assert AuditEvent.objects.filter(run_id=blocked_run.id, action="retry", actor="ops").exists()


def test_wake_now_ends_a_sleep(operator, clock):
    run = drive(services.run_start("nap", id="nap:admin", actor="test").id)

    operator.post(page(run.id, "wake"))

    assert drive(run.id).status == RunStatus.COMPLETED


def test_an_action_the_status_forbids_shows_the_engines_message_and_changes_nothing(
    operator, waiting_run
):
    response = operator.post(page(waiting_run.id, "retry"), follow=True)

    assert "only failed or blocked runs can be retried" in response.content.decode()
    assert WorkflowRun.objects.get(pk=waiting_run.id).status == RunStatus.WAITING
    assert not AuditEvent.objects.filter(action="retry").exists()


def test_a_viewer_without_the_operate_permission_is_refused_and_nothing_changes(
    viewer, waiting_run
):
    cancel = viewer.post(page(waiting_run.id, "cancel"))
    signal = viewer.post(page(waiting_run.id, "signal"), {"name": "go", "payload": "{}"})
    run_page = viewer.get(page(waiting_run.id)).content.decode()

    assert (cancel.status_code, signal.status_code) == (403, 403)
    assert WorkflowRun.objects.get(pk=waiting_run.id).status == RunStatus.WAITING
    assert not Signal.objects.exists()
    assert "Cancel run" not in run_page and "Send a signal" not in run_page


def test_actions_need_a_post(operator, waiting_run):
    response = operator.get(page(waiting_run.id, "cancel"))

    assert response.status_code == 405
    assert WorkflowRun.objects.get(pk=waiting_run.id).status == RunStatus.WAITING


def test_the_signal_form_sends_a_signal_that_resumes_the_run(operator, waiting_run):
    response = operator.post(
        page(waiting_run.id, "signal"),
        {"name": "go", "payload": '{"value": 3}', "dedupe_key": "desk-1"},
    )

    run = drive(waiting_run.id)
    assert response.status_code == 302
    assert run.status == RunStatus.COMPLETED and run.result == ["before", 3, "after"]
    assert AuditEvent.objects.get(run=run, action="signal").detail["dedupe_key"] == "desk-1"


def test_the_signal_form_rejects_invalid_json_and_records_nothing(operator, waiting_run):
    response = operator.post(
        page(waiting_run.id, "signal"), {"name": "go", "payload": "{approved: yes"}
    )

    assert response.status_code == 200
    assert "Enter a valid JSON" in response.content.decode()
    assert not Signal.objects.exists()


def test_the_journal_and_the_status_cannot_be_edited(operator, waiting_run):
    response = operator.post(page(waiting_run.id), {"status": "completed", "waiting_for": ""})

    assert response.status_code == 403
    assert WorkflowRun.objects.get(pk=waiting_run.id).status == RunStatus.WAITING
    assert JournalEntry.objects.filter(run_id=waiting_run.id).count() == 2
    assert not admin.site.is_registered(JournalEntry)


def test_bulk_cancel_from_the_list_reports_what_it_refused(operator, waiting_run, clock):
    done = drive(services.run_start("three_steps", 1, id="three:done", actor="test").id)

    response = operator.post(
        reverse("admin:durable_workflowrun_changelist"),
        {"action": "cancel_selected", "_selected_action": [waiting_run.id, done.id]},
        follow=True,
    )

    html = response.content.decode()
    assert WorkflowRun.objects.get(pk=waiting_run.id).status == RunStatus.CANCELLED
    assert "1 run cancelled." in html and "already completed" in html


def test_audit_events_are_listed_and_read_only(operator, waiting_run):
    response = operator.get(reverse("admin:durable_auditevent_changelist"))

    assert response.status_code == 200
    assert "onboarding:c-42" in response.content.decode()
    assert operator.get(reverse("admin:durable_auditevent_add")).status_code == 403


def test_the_action_forms_come_before_the_change_form_never_inside_it(operator, clock):
    run = drive(services.run_start("nap", id="nap:forms", actor="test").id)

    html = operator.get(page(run.id)).content.decode()

    change_form = html.index('id="workflowrun_form"')
    assert html.index(f'action="{page(run.id, "wake")}"') < change_form
    assert html.index(f'action="{page(run.id, "cancel")}"') < change_form


def test_the_signal_form_shows_a_dedupe_conflict_as_a_form_error(operator, waiting_run):
    services.signal_send(waiting_run.id, "go", {"value": 1}, dedupe_key="desk-2", actor="test")

    response = operator.post(
        page(waiting_run.id, "signal"),
        {"name": "go", "payload": '{"value": 2}', "dedupe_key": "desk-2"},
    )

    assert response.status_code == 200
    assert "another payload" in response.context["form"].non_field_errors()[0]
    assert list(Signal.objects.values_list("payload", flat=True)) == [{"value": 1}]


def test_the_signal_form_refuses_a_key_reserved_by_the_approvals_app(operator, waiting_run):
    response = operator.post(
        page(waiting_run.id, "signal"), {"name": "go", "payload": "", "dedupe_key": "approval:3"}
    )

    assert response.status_code == 200
    assert "reserved by &#x27;approvals&#x27;" in response.content.decode()
    assert not Signal.objects.exists()


def test_bulk_wake_counts_the_runs_it_woke_and_names_those_it_could_not_change(
    operator, waiting_run, clock
):
    napping = drive(services.run_start("nap", id="nap:bulk", actor="test").id)

    response = operator.post(
        reverse("admin:durable_workflowrun_changelist"),
        {"action": "wake_selected", "_selected_action": [waiting_run.id, napping.id]},
        follow=True,
    )

    assert [str(message) for message in response.context["messages"]] == [
        "1 run woken.",
        f"Run {waiting_run.id} not woken: it waits for "
        f"{waiting_run.waiting_for!r} and has no sleep or back-off to end (a wake "
        "never ends a wait for a signal early; it was only looked at again).",
    ]


def test_wake_now_on_a_run_waiting_for_a_signal_says_that_nothing_was_ended(operator, waiting_run):
    response = operator.post(page(waiting_run.id, "wake"), follow=True)

    html = response.content.decode()
    assert f"Run {waiting_run.id} not woken: it waits for" in html
    assert f"Run {waiting_run.id} woken." not in html
    assert (
        AuditEvent.objects.filter(run_id=waiting_run.id, action="wake").count() == 1
    )  # still looked at again


def test_wake_now_on_a_sleeping_run_says_it_was_woken(operator, clock):
    napping = drive(services.run_start("nap", id="nap:one", actor="test").id)

    response = operator.post(page(napping.id, "wake"), follow=True)

    assert f"Run {napping.id} woken." in response.content.decode()
