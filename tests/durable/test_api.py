"""The REST API: permissions, the error shape, input validation, and every action through the
services."""

import json
import re

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from durable import services
from durable.features.schedules import schedule_create
from durable.features.tokens import token_create
from durable.models import AuditEvent, RunStatus, Signal, WorkflowRun
from durable.testing import drive

pytestmark = pytest.mark.django_db


def user_with(*codenames: str, username: str = "operator") -> User:
    user = User.objects.create_user(username, password="pw-unused-123")
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename__in=codenames)
    )
    return user


def client_for(user: User) -> APIClient:
    client = APIClient()
    secret = token_create(user, scope="operate").secret
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


@pytest.fixture
def operator():
    return client_for(user_with("view_workflowrun", "operate_workflowrun"))


@pytest.fixture
def viewer():
    return client_for(user_with("view_workflowrun", username="viewer"))


@pytest.fixture
def waiting_run(clock):
    run = services.run_start("step_wait_step", id="orders:c-42/a b", actor="test")
    return drive(run.id)


def post_json(client, url, body, **headers):
    return client.post(url, json.dumps(body), content_type="application/json", **headers)


def test_a_request_without_credentials_gets_401_in_the_error_shape():
    response = APIClient().get("/api/runs/")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "not_authenticated"
    assert response["WWW-Authenticate"].startswith("Token")


def test_list_filters_by_status_and_workflow_and_paginates(operator, clock):
    services.run_start("three_steps", 1, id="three:1", actor="test")
    services.run_start("three_steps", 2, id="three:2", actor="test")
    drive(services.run_start("step_wait_step", id="wait:1", actor="test").id)

    response = operator.get(
        "/api/runs/", {"status": "pending", "workflow": "three_steps", "page_size": 1}
    )

    body = response.json()
    assert response.status_code == 200
    assert body["count"] == 2 and len(body["results"]) == 1 and body["next"]
    assert body["results"][0]["workflow"] == "three_steps"


def test_an_unknown_status_filter_is_a_400_naming_the_field(operator):
    response = operator.get("/api/runs/", {"status": "sleeping"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid"
    assert "status" in response.json()["error"]["detail"]


@pytest.mark.parametrize("page_size", ["true", "0", "501", "2.5"])
def test_a_page_size_that_is_not_a_whole_number_in_range_is_a_400(operator, page_size):
    response = operator.get("/api/runs/", {"page_size": page_size})

    assert response.status_code == 400
    assert "page_size" in response.json()["error"]["detail"]


def test_an_empty_page_number_is_a_400_not_the_first_page(operator, clock):
    response = operator.get("/api/runs/", {"page": ""})

    assert response.status_code == 400
    assert "page" in response.json()["error"]["detail"]


def test_a_misspelt_filter_is_a_400_naming_it_not_every_run(operator, clock):
    services.run_start("three_steps", 1, id="three:1", actor="test")

    response = operator.get("/api/runs/", {"stauts": "failed"})

    assert response.status_code == 400
    assert list(response.json()["error"]["detail"]) == ["stauts"]


def test_an_empty_filter_is_a_400_not_every_run(operator, clock):
    services.run_start("three_steps", 1, id="three:1", actor="test")

    response = operator.get("/api/runs/?workflow=")

    assert response.status_code == 400
    assert "workflow" in response.json()["error"]["detail"]


@pytest.mark.parametrize("blank", ["\x1e", "\u3000", " "])
def test_a_filter_of_white_space_alone_is_taken_as_sent_and_matches_no_run(operator, clock, blank):
    services.run_start("three_steps", 1, id="three:1", actor="test")

    response = operator.get("/api/runs/", {"workflow": blank, "parent": blank})

    assert response.status_code == 200  # the schema says any non-empty text: no trimming to blank
    assert response.json()["count"] == 0


def test_a_signal_name_keeps_its_spaces(operator, waiting_run):
    response = post_json(operator, f"/api/runs/{waiting_run.id}/signals/", {"name": " go "})

    assert response.status_code == 201
    assert response.json()["name"] == " go "


def test_the_schema_says_text_fields_take_no_nul_and_pages_have_bounds(operator):
    schema = operator.get("/api/schema/", HTTP_ACCEPT="application/json").json()

    assert (
        schema["components"]["schemas"]["SignalSendRequest"]["properties"]["name"]["pattern"]
        == "^[^\\u0000]*$"
    )
    page_size = next(
        p for p in schema["paths"]["/api/runs/"]["get"]["parameters"] if p["name"] == "page_size"
    )
    assert (page_size["schema"]["minimum"], page_size["schema"]["maximum"]) == (1, 500)


def test_an_empty_reason_is_valid_by_the_schema_as_the_api_takes_it(operator):
    """oneOf forbids a value two alternatives accept: "" was both "text without NUL" and
    "empty", so the schema said a blank reason was invalid (schemathesis found it)."""
    schema = operator.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    reasons = {
        name: schema["components"]["schemas"][name]["properties"]["reason"]
        for name in ("BulkRequestRequest", "RunCancelRequest", "SchedulePauseRequest")
    }

    assert {
        name: ("oneOf" in reason, reason["type"], reason["maxLength"])
        for name, reason in reasons.items()
    } == dict.fromkeys(reasons, (False, "string", 1000))


def test_detail_of_an_id_with_colon_slash_and_space_shows_journal_and_signals(
    operator, waiting_run
):
    services.signal_send(waiting_run.id, "unrelated", {"x": 1}, actor="test")

    response = operator.get("/api/runs/orders:c-42/a%20b/")

    body = response.json()
    assert response.status_code == 200
    assert body["id"] == "orders:c-42/a b"
    assert [(e["position"], e["kind"], e["name"], e["status"]) for e in body["journal"]] == [
        (0, "step", "record", "completed"),
        (1, "signal", "go", "waiting"),
    ]
    assert body["signals"][0]["name"] == "unrelated" and body["signals"][0]["consumed"] is False


def test_a_run_whose_id_ends_like_an_action_is_still_readable(operator, clock):
    services.run_start("three_steps", 1, id="odd/cancel", actor="test")

    response = operator.get("/api/runs/odd/cancel/")

    assert response.status_code == 200
    assert response.json()["id"] == "odd/cancel"


def test_an_unknown_run_is_a_404_run_not_found(operator):
    response = operator.get("/api/runs/nope:1/")

    assert response.status_code == 404
    assert response.json()["error"] == {
        "code": "run_not_found",
        "message": "no run with id 'nope:1'",
        "detail": None,
    }


def test_start_creates_a_run_and_audits_the_request(operator):
    response = post_json(
        operator,
        "/api/runs/",
        {"workflow": "three_steps", "id": "three:api", "args": [5]},
        HTTP_USER_AGENT="ops-test/1",
    )

    assert response.status_code == 201
    run = WorkflowRun.objects.get(pk="three:api")
    assert run.input == {"args": [5], "kwargs": {}}
    audit = AuditEvent.objects.get(run=run, action="start")
    assert audit.actor == "operator"
    assert audit.detail["via"] == "api" and audit.detail["user_agent"] == "ops-test/1"
    assert audit.detail["ip"] == "127.0.0.1" and audit.detail["path"] == "/api/runs/"


def test_starting_the_same_id_again_returns_the_existing_run_with_200(operator):
    body = {"workflow": "three_steps", "id": "three:again", "args": [5]}
    post_json(operator, "/api/runs/", body)

    response = post_json(operator, "/api/runs/", body)

    assert response.status_code == 200
    assert WorkflowRun.objects.filter(pk="three:again").count() == 1


def test_starting_an_existing_id_with_other_input_is_a_409_conflict(operator):
    post_json(operator, "/api/runs/", {"workflow": "three_steps", "id": "three:c", "args": [5]})

    response = post_json(
        operator, "/api/runs/", {"workflow": "three_steps", "id": "three:c", "args": [6]}
    )

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "run_conflict"


def test_an_unknown_workflow_is_a_400_and_nothing_is_written(operator):
    response = post_json(operator, "/api/runs/", {"workflow": "no_such_flow", "id": "x:1"})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "workflow_not_found"
    assert not WorkflowRun.objects.exists()


def test_input_that_does_not_fit_the_workflow_is_a_400_and_nothing_is_written(operator):
    response = post_json(operator, "/api/runs/", {"workflow": "three_steps", "kwargs": {"y": 1}})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "payload_error"
    assert "three_steps" in response.json()["error"]["message"]
    assert not WorkflowRun.objects.exists()


def test_bad_json_is_a_400_parse_error(operator):
    response = operator.post("/api/runs/", "{not json", content_type="application/json")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"


def test_a_viewer_cannot_start_a_run(viewer):
    response = post_json(viewer, "/api/runs/", {"workflow": "three_steps", "args": [1]})

    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"
    assert not WorkflowRun.objects.exists()


def test_a_signal_resumes_the_run_and_the_idempotency_key_dedupes_it(operator, waiting_run):
    url = "/api/runs/orders:c-42/a%20b/signals/"
    first = post_json(
        operator, url, {"name": "go", "payload": {"value": 7}}, HTTP_IDEMPOTENCY_KEY="req-1"
    )
    again = post_json(
        operator, url, {"name": "go", "payload": {"value": 7}}, HTTP_IDEMPOTENCY_KEY="req-1"
    )

    run = drive(waiting_run.id)

    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["id"] == again.json()["id"]
    assert Signal.objects.filter(run=run).count() == 1
    assert run.status == RunStatus.COMPLETED and run.result == ["before", 7, "after"]


def test_an_oversized_signal_is_a_413_and_nothing_is_written(operator, waiting_run, settings):
    settings.DURABLE_API_MAX_PAYLOAD_BYTES = 1024

    response = post_json(
        operator,
        "/api/runs/orders:c-42/a%20b/signals/",
        {"name": "go", "payload": {"blob": "x" * 2000}},
    )

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
    assert not Signal.objects.exists()


def test_a_payload_with_a_nul_character_is_a_400_and_nothing_is_written(operator, waiting_run):
    response = post_json(
        operator,
        "/api/runs/orders:c-42/a%20b/signals/",
        {"name": "go", "payload": {"text": "a\u0000b"}},
    )

    assert response.status_code == 400
    assert "NUL" in json.dumps(response.json()["error"]["detail"])
    assert not Signal.objects.exists()


def nested(depth: int):
    payload = "leaf"
    for _ in range(depth):
        payload = {"inner": payload}
    return payload


def test_a_signal_nested_500_deep_is_a_400_payload_error_and_nothing_is_written(
    operator, waiting_run
):
    response = post_json(
        operator, f"/api/runs/{waiting_run.id}/signals/", {"name": "go", "payload": nested(500)}
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "payload_error"
    assert "deep" in response.json()["error"]["message"]
    assert not Signal.objects.filter(run_id=waiting_run.id).exists()


def test_the_nesting_limit_is_a_setting(operator, waiting_run, settings):
    settings.DURABLE_API_MAX_PAYLOAD_DEPTH = 4

    too_deep = post_json(
        operator, f"/api/runs/{waiting_run.id}/signals/", {"name": "go", "payload": nested(5)}
    )
    fits = post_json(
        operator, f"/api/runs/{waiting_run.id}/signals/", {"name": "go", "payload": nested(3)}
    )

    assert too_deep.status_code == 400 and too_deep.json()["error"]["code"] == "payload_error"
    assert fits.status_code == 201


def test_start_input_nested_too_deep_is_a_400_payload_error(operator):
    response = post_json(operator, "/api/runs/", {"workflow": "three_steps", "args": [nested(100)]})

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "payload_error"
    assert not WorkflowRun.objects.exists()


def test_a_body_too_deep_for_the_json_parser_is_a_400_payload_error(operator, waiting_run):
    body = '{"name": "go", "payload": ' + "[" * 5000 + "]" * 5000 + "}"

    response = operator.post(
        f"/api/runs/{waiting_run.id}/signals/", body, content_type="application/json"
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "payload_error"
    assert not Signal.objects.filter(run_id=waiting_run.id).exists()


@pytest.mark.parametrize("action", ["cancel", "retry", "wake", "signals"])
def test_options_on_an_action_answers_200(operator, waiting_run, action):
    response = operator.options(f"/api/runs/{waiting_run.id}/{action}/")

    assert response.status_code == 200
    assert "POST" in response["Allow"]


def test_a_signal_to_a_finished_run_is_a_409(operator, clock):
    run = drive(services.run_start("three_steps", 1, id="three:done", actor="test").id)

    response = post_json(operator, f"/api/runs/{run.id}/signals/", {"name": "go"})

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "run_finished"


def test_cancel_records_the_reason_and_who_cancelled(operator, waiting_run):
    response = post_json(
        operator, "/api/runs/orders:c-42/a%20b/cancel/", {"reason": "customer withdrew"}
    )

    run = WorkflowRun.objects.get(pk=waiting_run.id)
    assert response.status_code == 200 and response.json()["status"] == "cancelled"
    assert run.status == RunStatus.CANCELLED
    audit = AuditEvent.objects.get(run=run, action="cancel")
    assert audit.actor == "operator" and audit.detail["reason"] == "customer withdrew"


def test_retrying_a_waiting_run_is_a_409_invalid_transition(operator, waiting_run):
    response = operator.post("/api/runs/orders:c-42/a%20b/retry/")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "invalid_transition"


def test_retry_sends_a_failed_run_back_to_pending(operator, clock):
    run = drive(services.run_start("fails_in_body", id="fails:1", actor="test").id)

    response = operator.post(f"/api/runs/{run.id}/retry/")

    assert response.status_code == 200
    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.PENDING


def test_wake_is_audited(operator, clock):
    run = drive(services.run_start("nap", id="nap:1", actor="test").id)

    response = operator.post(f"/api/runs/{run.id}/wake/")

    assert response.status_code == 200
    assert AuditEvent.objects.filter(run_id=run.id, action="wake", actor="operator").exists()


def test_the_schema_and_the_docs_page_are_served_without_a_cdn(operator, viewer):
    schema = operator.get("/api/schema/", HTTP_ACCEPT="application/json")
    operator.force_authenticate(User.objects.get(username="operator"))
    docs = operator.get("/api/docs/")

    assert schema.status_code == 200
    assert "/api/runs/{run_id}/signals/" in schema.json()["paths"]
    assert docs.status_code == 200
    page = docs.content.decode()
    assert "swagger-ui" in page and "/static/drf_spectacular_sidecar/" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page), (
        "the docs page loads something from elsewhere"
    )


@pytest.mark.parametrize("page", ["/api/docs/"])
def test_options_on_a_docs_page_says_its_methods_and_is_no_server_error(operator, page):
    operator.force_authenticate(User.objects.get(username="operator"))

    response = operator.options(page)

    assert response.status_code == 200
    assert "GET" in response["Allow"]


@pytest.mark.parametrize("page", ["/api/docs/"])
def test_options_from_a_person_signed_in_in_the_browser_is_no_server_error(client, page):
    client.force_login(User.objects.create_user("reader", password="unused-123"))

    response = client.options(page, HTTP_ACCEPT="text/html")

    assert response.status_code == 200 and "GET" in response["Allow"]


@pytest.mark.slow
def test_schemathesis_finds_no_server_error_and_no_schema_violation(clock):
    """Generated requests (valid and invalid) against every operation of the schema, in-process."""
    import schemathesis
    from django.core.wsgi import get_wsgi_application
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.config import SchemathesisConfig

    token = token_create(
        user_with("view_workflowrun", "operate_workflowrun", "view_schedule", "operate_schedule"),
        scope="operate",
    ).secret
    auth = {"Authorization": f"Token {token}"}
    drive(services.run_start("step_wait_step", id="orders:st-1", actor="test").id)
    schedule_create(
        "st-daily",
        "three_steps",
        cron_expression="0 0 * * *",
        id_template="st:{date}",
        args=[1],
        actor="test",
    )
    # Every check runs. Two exceptions, stated here: a start whose body fits the schema may
    # still name no registered workflow or not bind to its parameters (a 400 the schema cannot
    # express: each workflow has its own signature); a bulk filter's keys other than status,
    # workflow and version must be attr.<identifier> (OpenAPI 3.0 has no propertyNames); a
    # confirmation token is valid only if this server signed it for this user.
    accepted_or_400 = {
        "positive_data_acceptance": {
            "expected-statuses": ["2xx", "400", "401", "403", "404", "409"]
        }
    }
    config = SchemathesisConfig.from_dict(
        {
            "operations": [
                {"include-name": "POST /api/runs/", "checks": accepted_or_400},
                {"include-name": "POST /api/bulk/", "checks": accepted_or_400},
                {"include-name": "POST /api/bulk/confirm/", "checks": accepted_or_400},
            ]
        }
    )
    schema = schemathesis.openapi.from_wsgi(
        "/api/schema/?format=json", get_wsgi_application(), config=config, headers=auth
    )
    checks = None  # every built-in check schemathesis has, not a chosen few
    operations = [result.ok() for result in schema.get_all_operations()]
    assert {op.label for op in operations} >= {"GET /api/runs/", "POST /api/runs/{run_id}/signals/"}

    by_label = {op.label: op for op in operations}
    # Known-good requests first, so the 200/201 bodies of real runs are checked too.
    known = [
        ("GET /api/runs/", {}, {"status": "waiting"}, schemathesis.core.NOT_SET),
        ("GET /api/runs/{run_id}/", {"run_id": "orders:st-1"}, None, schemathesis.core.NOT_SET),
        ("POST /api/runs/", {}, None, {"workflow": "three_steps", "args": [1]}),
        ("POST /api/runs/{run_id}/signals/", {"run_id": "orders:st-1"}, None, {"name": "go"}),
        (
            "POST /api/runs/{run_id}/wake/",
            {"run_id": "orders:st-1"},
            None,
            schemathesis.core.NOT_SET,
        ),
        (
            "POST /api/bulk/",
            {},
            None,
            {"action": "wake", "filter": {"status": "waiting"}, "dry_run": True},
        ),
        ("POST /api/bulk/", {}, None, {"action": "wake", "filter": {"workflow": "step_wait_step"}}),
        ("POST /api/runs/{run_id}/fork/", {"run_id": "orders:st-1"}, None, {"at_position": 1}),
        ("GET /api/schedules/", {}, None, schemathesis.core.NOT_SET),
        (
            "POST /api/schedules/{name}/trigger/",
            {"name": "st-daily"},
            None,
            schemathesis.core.NOT_SET,
        ),
        ("POST /api/schedules/{name}/pause/", {"name": "st-daily"}, None, {"reason": "test"}),
        (
            "POST /api/schedules/{name}/resume/",
            {"name": "st-daily"},
            None,
            schemathesis.core.NOT_SET,
        ),
        ("POST /api/runs/{run_id}/cancel/", {"run_id": "orders:st-1"}, None, {"reason": "test"}),
    ]
    for label, path_parameters, query, body in known:
        case = by_label[label].Case(path_parameters=path_parameters, query=query, body=body)
        assert case.call_and_validate(headers=auth, checks=checks).status_code in (200, 201), label
    preview = (
        by_label["POST /api/bulk/"]
        .Case(body={"action": "cancel", "filter": {"status": "waiting"}, "dry_run": True})
        .call(headers=auth)
        .json()
    )
    confirm = by_label["POST /api/bulk/confirm/"].Case(body={"token": preview["token"]})
    assert confirm.call_and_validate(headers=auth, checks=checks).status_code == 200

    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):

            @given(case=operation.as_strategy(generation_mode=mode))
            @settings(
                max_examples=30,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case):
                case.call_and_validate(headers=auth, checks=checks)

            try:
                check()
            except Unsatisfiable:
                # Nothing invalid to generate (a POST whose only input is a string path id).
                assert mode == GenerationMode.NEGATIVE, operation.label


@pytest.fixture(autouse=True)
def _keep_the_test_connection_open():
    """The WSGI handler closes the connection after a request; the test's transaction needs it
    (Django's own test client disconnects the same receivers)."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def test_a_graceful_cancel_through_the_api_lets_the_workflow_clean_up(operator, clock):
    run = services.run_start("polite_cancel", "c-api", id="cancel:api", actor="test")
    drive(run.id)

    response = post_json(
        operator, f"/api/runs/{run.id}/cancel/", {"reason": "asked by phone", "graceful": True}
    )

    assert response.status_code == 200 and response.json()["status"] == "waiting"
    assert drive(run.id).status == "cancelled"


def test_a_signal_reusing_a_key_with_another_payload_is_a_409_signal_conflict(
    operator, waiting_run
):
    url = "/api/runs/orders:c-42/a%20b/signals/"
    post_json(operator, url, {"name": "go", "payload": {"value": 7}}, HTTP_IDEMPOTENCY_KEY="req-9")

    response = post_json(
        operator, url, {"name": "go", "payload": {"value": 8}}, HTTP_IDEMPOTENCY_KEY="req-9"
    )

    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "signal_conflict" and "another payload" in error["message"]
    assert list(Signal.objects.values_list("payload", flat=True)) == [{"value": 7}]


def test_a_signal_under_the_approvals_reserved_prefix_is_a_409_naming_the_owner(
    operator, waiting_run
):
    response = post_json(
        operator,
        "/api/runs/orders:c-42/a%20b/signals/",
        {"name": "go"},
        HTTP_IDEMPOTENCY_KEY="approval:1",
    )

    assert response.status_code == 409
    assert "reserved by 'approvals'" in response.json()["error"]["message"]
    assert not Signal.objects.exists()


def _typed_body_fields():
    """(path, property, JSON type) for every string, boolean or integer property of a request
    body in the schema the API publishes."""
    from drf_spectacular.generators import SchemaGenerator

    schema = SchemaGenerator().get_schema(request=None, public=True)
    components = schema["components"]["schemas"]
    for path, operations in schema["paths"].items():
        body = (
            operations.get("post", {})
            .get("requestBody", {})
            .get("content", {})
            .get("application/json")
        )
        reference = (body or {}).get("schema", {}).get("$ref", "")
        for name, spec in (
            components.get(reference.rsplit("/", 1)[-1], {}).get("properties", {}).items()
        ):
            if spec.get("type") in MISTYPED and not spec.get("readOnly"):
                yield path, name, spec["type"]


MISTYPED = {
    "string": [0, 1, True, 2.5],
    "boolean": [0, 1, "true", "yes", None],
    "integer": ["1", 1.0, True, None],
}


def test_every_string_boolean_or_integer_of_a_request_body_refuses_another_json_type(
    operator, waiting_run
):
    fields = list(_typed_body_fields())
    assert {
        ("/api/runs/{run_id}/cancel/", "graceful"),
        ("/api/runs/{run_id}/signals/", "name"),
        ("/api/runs/{run_id}/fork/", "at_position"),
    } <= {(path, name) for path, name, _ in fields}
    valid = {
        "/api/runs/": {"workflow": "three_steps", "args": [1]},
        "/api/runs/{run_id}/signals/": {"name": "go"},
        "/api/runs/{run_id}/cancel/": {"reason": "r", "graceful": False},
        "/api/runs/{run_id}/fork/": {"at_position": 0},
        "/api/bulk/": {"action": "wake", "filter": {"status": "waiting"}, "dry_run": True},
        "/api/bulk/confirm/": {"token": "t"},
        "/api/invoices/{number}/void/": {"reason": "r"},
        "/api/invoices/{number}/due-date/": {"due_at": "2099-01-01T00:00:00+00:00"},
        "/api/schedules/{name}/pause/": {"reason": "r"},
    }
    User.objects.get(username="operator").user_permissions.add(
        Permission.objects.get(content_type__app_label="processes", codename="change_invoice"),
        Permission.objects.get(content_type__app_label="durable", codename="operate_schedule"),
    )
    before = (WorkflowRun.objects.count(), Signal.objects.count())

    accepted = []
    for path, name, json_type in fields:
        url = (
            path.replace("{run_id}", "orders:c-42%2Fa%20b")
            .replace("{number}", "NF-1")
            .replace("{name}", "daily")
        )
        for value in MISTYPED[json_type]:
            response = post_json(operator, url, {**valid[path], name: value})
            if response.status_code != 400 or name not in (
                response.json()["error"]["detail"] or {}
            ):
                accepted.append((path, name, value, response.status_code))

    assert accepted == []
    assert (WorkflowRun.objects.count(), Signal.objects.count()) == before
    assert WorkflowRun.objects.get(pk="orders:c-42/a b").status == "waiting"
