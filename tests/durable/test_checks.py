"""The system check reads workflow bodies and names every call that breaks replay."""

import datetime
import inspect
import random
import random as r
import secrets
import time
import urllib.request
import uuid
from datetime import date
from datetime import datetime as dt

import pytest
from django.core.checks import run_checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.utils import timezone

from durable import workflow
from durable.runtime.determinism import inspect_function
from durable.testing import override_workflow
from tests.durable import workflows as engine_workflows
from tests.durable.workflows import add_one, record
from tests.effects.models import Effect

# --- bodies that break replay, one call each ---


def calls_datetime_now():
    return datetime.datetime.now()


def calls_aliased_datetime_utcnow():
    return dt.utcnow()


def calls_datetime_today():
    return dt.today()


def calls_date_today():
    return date.today()


def calls_timezone_now():
    return timezone.now()


def calls_time_time():
    return time.time()


def calls_time_ns():
    return time.time_ns()


def calls_monotonic():
    return time.monotonic()


def calls_perf_counter():
    return time.perf_counter()


def calls_random_random():
    return random.random()


def calls_aliased_random_choice():
    return r.choice([1, 2])


def calls_uuid1():
    return uuid.uuid1()


def calls_uuid4():
    return uuid.uuid4()


def calls_secrets():
    return secrets.token_hex(8)


def calls_requests():
    import requests

    return requests.get("https://bank.example/statements")


def calls_httpx():
    import httpx as client

    return client.post("https://ledger.example/corrections")


def calls_urllib():
    return urllib.request.urlopen("https://bank.example/")


def calls_open():
    with open("statement.csv") as statement:
        return statement.read()


def calls_orm_manager():
    return Effect.objects.filter(name="x").count()


def calls_save(effect):
    effect.save()


def calls_delete(effect):
    effect.delete()


BROKEN = [
    (calls_datetime_now, "durable.W001", "datetime.datetime.now"),
    (calls_aliased_datetime_utcnow, "durable.W001", "dt.utcnow"),
    (calls_datetime_today, "durable.W001", "dt.today"),
    (calls_date_today, "durable.W001", "date.today"),
    (calls_timezone_now, "durable.W001", "timezone.now"),
    (calls_time_time, "durable.W001", "time.time"),
    (calls_time_ns, "durable.W001", "time.time_ns"),
    (calls_monotonic, "durable.W001", "time.monotonic"),
    (calls_perf_counter, "durable.W001", "time.perf_counter"),
    (calls_random_random, "durable.W002", "random.random"),
    (calls_aliased_random_choice, "durable.W002", "r.choice"),
    (calls_uuid1, "durable.W003", "uuid.uuid1"),
    (calls_uuid4, "durable.W003", "uuid.uuid4"),
    (calls_secrets, "durable.W004", "secrets.token_hex"),
    (calls_requests, "durable.W005", "requests.get"),
    (calls_httpx, "durable.W005", "client.post"),
    (calls_urllib, "durable.W005", "urllib.request.urlopen"),
    (calls_open, "durable.W006", "open"),
    (calls_orm_manager, "durable.W007", "Effect.objects.filter"),
    (calls_save, "durable.W007", "effect.save"),
    (calls_delete, "durable.W007", "effect.delete"),
]


@pytest.mark.parametrize(("body", "rule_id", "call"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_each_call_that_breaks_replay_is_flagged_once(body, rule_id, call):
    findings = inspect_function(body)

    assert [(f.rule.id, f.call) for f in findings] == [(rule_id, call)]


def test_a_finding_names_the_file_and_line_of_the_call():
    _, first_line = inspect.getsourcelines(calls_time_time)

    [finding] = inspect_function(calls_time_time)

    assert finding.path == "tests/durable/test_checks.py"
    assert finding.line == first_line + 1


# --- bodies that are deterministic ---


def fetch_statement(batch_id: str) -> dict:
    return {"batch": batch_id}


def deterministic_body(batch_id: str, moment: str) -> dict:
    started = workflow.now()
    token = workflow.uuid4()
    draw = workflow.random()
    statement = workflow.step(fetch_statement, batch_id)
    workflow.step(time.time, name="stamp")  # a reference: runs in the step
    workflow.step(lambda: uuid.uuid4().hex, name="token")  # a lambda handed to a step

    def post_correction(entry_id: str) -> str:  # defined here, runs in a step
        return f"{entry_id}@{datetime.datetime.now().isoformat()}"

    workflow.step(post_correction, "e9", name="post_e9")
    parsed = dt.fromisoformat(moment) + datetime.timedelta(days=1)
    name_id = uuid.uuid5(uuid.NAMESPACE_URL, batch_id)
    quoted = urllib.parse.quote(batch_id)
    local = time.localtime(0)
    seeded = random.Random(batch_id).random()
    return {
        "started": started,
        "token": token,
        "draw": draw,
        "statement": statement,
        "parsed": parsed,
        "id": name_id,
        "q": quoted,
        "local": local,
        "seeded": seeded,
    }


def test_deterministic_alternatives_and_steps_are_not_flagged():
    assert inspect_function(deterministic_body) == []


def shadows_a_module_name(random):
    return random.random()


def test_a_parameter_that_shadows_a_module_is_not_the_module():
    assert inspect_function(shadows_a_module_name) == []


def reaches_the_clock_through_another_module():
    return engine_workflows.time.time()


def test_a_module_reached_through_another_module_is_resolved():
    assert [f.call for f in inspect_function(reaches_the_clock_through_another_module)] == [
        "engine_workflows.time.time"
    ]


def silenced_on_purpose():
    started = time.monotonic()  # durable: allow (only logged, never branched on)
    return started


def test_a_comment_silences_one_line_on_purpose():
    assert inspect_function(silenced_on_purpose) == []


def two_calls_one_silenced():
    time.time()  # durable: allow
    return random.random()


def test_the_comment_silences_only_its_own_line():
    assert [f.rule.id for f in inspect_function(two_calls_one_silenced)] == ["durable.W002"]


def nested_helper_called_directly():
    def stamp():
        return time.time()

    return stamp()


def test_a_nested_function_called_by_the_body_is_read_as_body():
    assert [f.rule.id for f in inspect_function(nested_helper_called_directly)] == ["durable.W001"]


def evaluates_a_call_in_step_arguments():
    return workflow.step(record, str(uuid.uuid4()))


def test_a_call_evaluated_in_a_steps_arguments_runs_in_the_body_and_is_flagged():
    assert [f.rule.id for f in inspect_function(evaluates_a_call_in_step_arguments)] == [
        "durable.W003"
    ]


# --- through Django's check framework ---


def test_the_system_check_reports_a_registered_workflow_with_its_fix():
    with override_workflow(calls_time_time, name="stamped", version=3):
        messages = [m for m in run_checks(tags=["durable"]) if "stamped" in m.obj]

    [message] = messages
    assert message.id == "durable.W001"
    assert "tests/durable/test_checks.py:" in message.msg
    assert "time.time()" in message.msg
    assert "workflow.now()" in message.hint
    assert message.obj == "workflow 'stamped' v3"


def test_manage_py_check_fails_on_warnings_when_asked(capsys):
    with override_workflow(calls_uuid4, name="minted"):
        with pytest.raises(SystemCheckError, match=r"durable\.W003"):
            call_command("check", "--tag", "durable", "--fail-level", "WARNING")


def test_every_registered_workflow_passes_the_check():
    import tests.durable.test_onboarding_example  # noqa: F401  (registers example_onboarding)

    assert run_checks(tags=["durable"]) == []


def uses_add_one_and_record(x: int) -> list:
    return [workflow.step(add_one, x), workflow.step(record, "done")]


def test_a_workflow_made_of_steps_is_clean():
    assert inspect_function(uses_add_one_and_record) == []
