"""``manage.py durable``: the same services from a shell, readable output, non-zero exits on
errors."""

import json
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from durable import services
from durable.models import AuditEvent, RunStatus, Signal, WorkflowRun
from durable.testing import drive
from tests.support import ROOT, subprocess_env

pytestmark = pytest.mark.django_db


def durable(*argv: str) -> str:
    out = StringIO()
    call_command("durable", *argv, stdout=out)
    return out.getvalue()


@pytest.fixture
def waiting_run(clock):
    return drive(services.run_start("step_wait_step", id="onboarding:c-7", actor="test").id)


def test_start_with_positional_json_arguments_creates_the_run_and_audits_the_cli():
    output = durable("start", "three_steps", "4", "--id", "three:cli")

    run = WorkflowRun.objects.get(pk="three:cli")
    assert "three:cli" in output and "pending" in output
    assert run.input == {"args": [4], "kwargs": {}}
    assert AuditEvent.objects.get(run=run, action="start").detail["via"] == "cli"


def test_start_takes_keyword_input_as_a_json_object():
    durable("start", "three_steps", "--id", "three:kw", "--input", '{"x": 9}')

    assert WorkflowRun.objects.get(pk="three:kw").input == {"args": [], "kwargs": {"x": 9}}


def test_start_of_an_unknown_workflow_exits_1_with_the_message():
    with pytest.raises(CommandError, match="no workflow named 'nope'") as failure:
        durable("start", "nope")

    assert failure.value.returncode == 1
    assert not WorkflowRun.objects.exists()


def test_start_with_input_that_does_not_fit_exits_2_and_writes_nothing():
    with pytest.raises(CommandError, match="does not fit workflow 'three_steps'") as failure:
        durable("start", "three_steps", "--input", '{"y": 1}')

    assert failure.value.returncode == 2
    assert not WorkflowRun.objects.exists()


def test_signal_with_bad_json_exits_2_and_records_nothing(waiting_run):
    with pytest.raises(CommandError, match="--payload is not valid JSON") as failure:
        durable("signal", waiting_run.id, "go", "--payload", "{value: 1")

    assert failure.value.returncode == 2
    assert not Signal.objects.exists()


def test_signal_resumes_the_run_and_a_repeated_dedupe_key_is_one_signal(waiting_run):
    durable("signal", waiting_run.id, "go", "--payload", '{"value": 5}', "--dedupe-key", "sms-1")
    durable("signal", waiting_run.id, "go", "--payload", '{"value": 5}', "--dedupe-key", "sms-1")

    run = drive(waiting_run.id)
    assert Signal.objects.filter(run=run).count() == 1
    assert run.status == RunStatus.COMPLETED and run.result == ["before", 5, "after"]


def test_cancel_and_retry_go_through_the_services(clock):
    failed = drive(services.run_start("fails_in_body", id="fails:cli", actor="test").id)

    durable("retry", failed.id)
    durable("cancel", failed.id, "--reason", "not needed")

    run = WorkflowRun.objects.get(pk=failed.id)
    assert run.status == RunStatus.CANCELLED and run.error["message"] == "not needed"
    assert list(AuditEvent.objects.filter(run=run).values_list("action", flat=True)) == [
        "start",
        "retry",
        "cancel",
    ]


def test_a_graceful_cancel_lets_the_workflow_say_goodbye_and_records_the_cli(clock):
    run = drive(services.run_start("polite_cancel", "Padaria", id="polite:cli", actor="test").id)

    printed = durable("cancel", run.id, "--reason", "customer asked", "--graceful")
    run = drive(run.id)

    assert "the workflow cleans up first" in printed
    assert (run.status, run.result) == (
        RunStatus.CANCELLED,
        "bye: customer asked (cli:" + run.result.split("(cli:")[1],
    )
    assert AuditEvent.objects.get(run=run, action="cancel").detail["graceful"] is True


def test_retry_of_a_waiting_run_exits_1_with_the_engines_message(waiting_run):
    with pytest.raises(CommandError, match="only failed or blocked runs can be retried"):
        durable("retry", waiting_run.id)


def test_status_shows_the_run_its_journal_and_its_signals(waiting_run):
    services.signal_send(waiting_run.id, "later", {"n": 1}, actor="test")

    output = durable("status", waiting_run.id)

    assert "step_wait_step v1" in output and "waiting for signal:go" in output
    assert "journal (2)" in output and "record" in output and "signal  go" in output
    assert "later" in output and "pending" in output


def test_status_names_a_runs_parent_children_and_search_attributes(clock):
    parent = drive(
        services.run_start("reconcile_disputes", [("e1", 1)], id="recon:cli", actor="test").id
    )
    child = drive("recon:cli:child:0")
    WorkflowRun.objects.filter(pk=parent.id).update(attributes={"stage": "correcting"})

    parent_output = durable("status", parent.id)
    child_output = durable("status", child.id)

    assert "children  recon:cli:child:0 (completed)" in parent_output
    assert "attrs     " in parent_output and "correcting" in parent_output
    assert f"parent    {parent.id}" in child_output


def test_status_shows_an_archived_run_and_says_it_is_archived(clock):
    from tests.durable.test_archive import archive_now, finished_run

    run = finished_run("reorder:cli")
    clock.advance(timedelta(days=100))
    archive_now()

    output = durable("status", run.id)

    assert not WorkflowRun.objects.filter(pk=run.id).exists()
    assert "status    completed (archived)" in output


def test_status_json_of_an_archived_run_is_the_apis_archived_document(clock):
    from tests.durable.test_archive import archive_now, finished_run

    run = finished_run("reorder:cli-json")
    clock.advance(timedelta(days=100))
    archive_now()

    document = json.loads(durable("status", "--json", run.id))

    assert (document["id"], document["status"]) == (run.id, RunStatus.COMPLETED)
    assert [entry["kind"] for entry in document["journal"]] == ["step", "signal", "step"]
    assert document["archived"]["batch"]


def test_list_filters_by_status_and_workflow(waiting_run):
    services.run_start("three_steps", 1, id="three:list", actor="test")

    waiting = durable("list", "--status", "waiting")
    three = durable("list", "--workflow", "three_steps")

    assert "onboarding:c-7" in waiting and "three:list" not in waiting
    assert "three:list" in three and "onboarding:c-7" not in three


def test_an_unknown_run_makes_the_process_exit_non_zero():
    result = subprocess.run(
        [sys.executable, "manage.py", "durable", "status", "no:such-run"],
        cwd=ROOT,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 1
    assert "no run with id 'no:such-run'" in result.stderr


@pytest.fixture
def without_the_api_extra(monkeypatch):
    """As if djangorestframework and drf-spectacular were not installed (the core wheel alone)."""
    from durable.management.commands import durable as command

    real_import = command.importlib.import_module

    def import_module(name, *args):
        if name == "durable.surfaces.cli.status":
            raise ModuleNotFoundError("No module named 'drf_spectacular'", name="drf_spectacular")
        return real_import(name, *args)

    monkeypatch.setattr(command.importlib, "import_module", import_module)


def test_a_subcommand_that_needs_an_extra_says_which_and_the_others_still_work(
    without_the_api_extra, waiting_run
):
    with pytest.raises(CommandError, match=r"django-durable-flows\[api\]"):
        durable("status", waiting_run.id)

    assert waiting_run.id in durable("list")
