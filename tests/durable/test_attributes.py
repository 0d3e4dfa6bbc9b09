"""Search attributes: set by the body, journaled, merged on the run, filtered in the API and
admin."""

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.urls import reverse
from rest_framework.test import APIClient

from durable import services, workflow
from durable.errors import Fenced
from durable.features import history
from durable.features.tokens import token_create
from durable.models import EntryKind, JournalEntry, RunStatus, WorkflowRun
from durable.runtime.store import live
from durable.testing import drive
from tests.durable.crashed import as_if_its_worker_died

pytestmark = pytest.mark.django_db


@workflow(name="attributed_onboarding")
def attributed_onboarding(cnpj: str) -> str:
    workflow.set_attributes(cnpj=cnpj, customer="Padaria Pão Quente", stage="awaiting selfie")
    workflow.wait_for_signal("selfie")
    workflow.set_attributes(stage="in review", reviewers=2)
    return "done"


@workflow(name="badly_attributed")
def badly_attributed() -> str:
    workflow.set_attributes(tags=["a", "b"])
    return "unreachable"


@pytest.fixture
def waiting_run(clock):
    return drive(
        services.run_start(attributed_onboarding, "12345678000199", id="onb:attr", actor="test").id
    )


def attribute_entries(run_id: str) -> int:
    return JournalEntry.objects.filter(run_id=run_id, kind=EntryKind.ATTRIBUTES).count()


def test_attributes_are_stored_on_the_run_with_their_journal_entry(waiting_run):
    assert waiting_run.attributes == {
        "cnpj": "12345678000199",
        "customer": "Padaria Pão Quente",
        "stage": "awaiting selfie",
    }
    entry = JournalEntry.objects.get(run_id=waiting_run.id, kind=EntryKind.ATTRIBUTES)
    assert (entry.position, entry.result["stage"]) == (0, "awaiting selfie")


def test_attributes_set_twice_merge_key_by_key_and_the_latest_wins(waiting_run):
    services.signal_send(waiting_run.id, "selfie", {"file": "s.jpg"}, actor="test")

    run = drive(waiting_run.id)

    assert run.status == RunStatus.COMPLETED
    assert run.attributes == {
        "cnpj": "12345678000199",
        "customer": "Padaria Pão Quente",
        "stage": "in review",
        "reviewers": 2,
    }
    assert attribute_entries(run.id) == 2


def test_replay_does_not_write_recorded_attributes_again(waiting_run):
    WorkflowRun.objects.filter(pk=waiting_run.id).update(attributes={})  # so a rewrite would show
    services.signal_send(waiting_run.id, "selfie", {"file": "s.jpg"}, actor="test")

    run = drive(waiting_run.id)  # replays position 0, then sets the second time

    assert run.attributes == {"stage": "in review", "reviewers": 2}
    assert attribute_entries(run.id) == 2


def test_a_worker_that_lost_its_lease_writes_neither_the_entry_nor_the_attributes(clock):
    run = services.run_start(attributed_onboarding, "1", id="onb:fenced", actor="test")
    _, lease = live.claim(run.id, owner="worker-a")
    entry = JournalEntry(
        run_id=run.id,
        position=0,
        kind=EntryKind.ATTRIBUTES,
        name="attributes",
        status="completed",
        result={"stage": "stale"},
        created_at=clock.now(),
    )
    services.run_cancel(run.id, reason="stop", actor="test")

    with pytest.raises(Fenced):
        lease.record(entry, attributes={"stage": "stale"})

    assert WorkflowRun.objects.get(pk=run.id).attributes == {}
    assert attribute_entries(run.id) == 0


def test_a_value_that_is_not_a_json_scalar_is_a_type_error_in_the_body_and_nothing_is_recorded(
    clock,
):
    run = drive(services.run_start(badly_attributed, id="bad:attr", actor="test").id)

    assert run.status == RunStatus.FAILED
    assert run.error["type"] == "TypeError"
    assert "'tags' must be a JSON scalar" in run.error["message"]
    assert (run.attributes, attribute_entries(run.id)) == ({}, 0)


def test_a_recorded_history_with_attributes_replays(waiting_run):
    services.signal_send(waiting_run.id, "selfie", {"file": "s.jpg"}, actor="test")
    drive(waiting_run.id)

    report = history.history_replay(history.history_parse(history.history_export(waiting_run.id)))

    assert report.ok, report.summary
    assert "3 journal entries replay; the code returns" in report.summary


# --- the API filter ---


@pytest.fixture
def thousand_runs(clock):
    now = clock.now()
    WorkflowRun.objects.bulk_create(
        [
            WorkflowRun(
                id=f"bulk:{i:04d}",
                workflow_name="attributed_onboarding",
                input={},
                status=RunStatus.WAITING,
                created_at=now,
                updated_at=now,
                attributes={
                    "cnpj": f"{i:014d}",
                    "branch": i % 10,
                    "vip": i % 100 == 0,
                    "stage": "awaiting selfie" if i % 2 else "in review",
                },
            )
            for i in range(1000)
        ],
        batch_size=500,
    )


@pytest.fixture
def api():
    user = User.objects.create_user("operator", password="pw-unused-123")
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    client = APIClient()
    secret = token_create(user, scope="read").secret
    client.credentials(HTTP_AUTHORIZATION=f"Token {secret}")
    return client


def listed(response) -> set[str]:
    assert response.status_code == 200, response.content
    return {run["id"] for run in response.json()["results"]}


def test_the_api_filter_returns_exactly_the_run_with_that_attribute_among_a_thousand(
    api, thousand_runs
):
    response = api.get("/api/runs/", {"attr.cnpj": "00000000000042"})

    assert listed(response) == {"bulk:0042"}
    assert response.json()["results"][0]["attributes"]["cnpj"] == "00000000000042"


def test_several_attribute_filters_combine_with_and_and_numbers_match_their_json_text(
    api, thousand_runs
):
    response = api.get("/api/runs/", {"attr.branch": "0", "attr.vip": "true", "page_size": 500})

    assert listed(response) == {f"bulk:{i:04d}" for i in range(0, 1000, 100)}


def test_an_attribute_filter_with_spaces_matches_the_whole_value(api, thousand_runs):
    response = api.get(
        "/api/runs/", {"attr.stage": "in review", "attr.branch": "3", "page_size": 500}
    )

    assert response.json()["count"] == 0  # odd branches are all "awaiting selfie"
    assert api.get("/api/runs/", {"attr.stage": "in review"}).json()["count"] == 500


def test_an_attribute_name_no_attribute_can_have_is_a_400_naming_the_parameter(api):
    response = api.get("/api/runs/", {"attr.a-b": "1"})

    assert response.status_code == 400
    assert "attr.a-b" in response.json()["error"]["detail"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the GIN index is PostgreSQL's")
def test_the_attribute_filter_is_answered_by_the_gin_index(thousand_runs):
    from durable import selectors

    with connection.cursor() as cursor:
        cursor.execute(
            "SET LOCAL enable_seqscan = off"
        )  # 1,000 rows: make the planner show its choice
    # Unordered: with sequential scans off, a list ordered by created_at may walk that index
    # instead (with a million runs, EXPLAIN ANALYZE shows the GIN index, then a sort of the
    # matches).
    plan = selectors.runs_with_attributes(
        WorkflowRun.objects.order_by(), [("cnpj", "00000000000042")]
    ).explain()

    assert "durable_run_attributes" in plan


# --- the admin ---


@pytest.fixture
def admin_client(client):
    user = User.objects.create_user("ops", password="pw-unused-123", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_workflowrun"))
    client.force_login(user)
    return client


@pytest.fixture
def staged_runs(clock):
    now = clock.now()
    for run_id, attributes in [
        ("onb:selfie", {"stage": "awaiting selfie", "cnpj": "11222333000181"}),
        ("onb:review", {"stage": "in review", "cnpj": "99888777000166"}),
        ("onb:plain", {}),
    ]:
        WorkflowRun.objects.create(
            id=run_id,
            workflow_name="attributed_onboarding",
            input={},
            attributes=attributes,
            created_at=now,
            updated_at=now,
        )


def changelist(client, **params):
    response = client.get(reverse("admin:durable_workflowrun_changelist"), params)
    assert response.status_code == 200
    return response


def listed_in(response) -> set[str]:
    return {run.id for run in response.context["cl"].result_list}


def test_the_admin_list_filters_on_the_stage_and_offers_each_stage(admin_client, staged_runs):
    response = changelist(admin_client, stage="in review")

    assert listed_in(response) == {"onb:review"}
    assert "?stage=awaiting+selfie" in response.content.decode()  # every stage runs have


def test_the_admin_search_finds_a_run_by_an_attribute_value(admin_client, staged_runs):
    response = changelist(admin_client, q="11222333000181")

    assert listed_in(response) == {"onb:selfie"}


def test_the_admin_list_shows_the_stage_as_the_runs_human_status(admin_client, staged_runs):
    page = changelist(admin_client).content.decode()

    assert '<div class="durable-stage" translate="no">awaiting selfie</div></td>' in page


def test_the_admin_run_page_shows_the_attributes(admin_client, waiting_run):
    response = admin_client.get(
        reverse("admin:durable_workflowrun_change", args=[quote(waiting_run.id)])
    )

    page = response.content.decode()
    assert "Search attributes" in page and "Padaria Pão Quente" in page and "12345678000199" in page


# --- what the body may set ---


@workflow(name="attribute_case")
def attribute_case(case: str) -> str:
    attributes = {
        "list": {"tags": ["a", "b"]},
        "infinite": {"ratio": float("inf")},
        "finite": {"ratio": 0.25},
        "nul": {"note": "a\x00b"},
        "longest_text": {"note": "x" * 1000},
        "too_long_text": {"note": "x" * 1001},
        "double_underscore": {"a__b": 1},
        "longest_name": {"n" * 64: 1},
    }[case]
    workflow.set_attributes(**attributes)
    return "set"


def run_case(case: str) -> WorkflowRun:
    return drive(services.run_start(attribute_case, case, id=f"attr:{case}", actor="test").id)


def test_a_value_that_is_not_a_json_scalar_is_named_by_its_type_in_the_error(clock):
    run = run_case("list")

    assert run.error["message"] == (
        "search attribute 'tags' must be a JSON scalar (str, int, float, bool or None), not list"
    )


def test_an_infinite_number_is_a_value_error_naming_the_attribute_and_the_value(clock):
    run = run_case("infinite")

    assert run.status == RunStatus.FAILED
    assert (run.error["type"], run.error["message"]) == (
        "ValueError",
        "search attribute 'ratio' must be a finite number, not inf",
    )
    assert run.attributes == {}


def test_a_finite_float_is_stored(clock):
    run = run_case("finite")

    assert (run.status, run.attributes) == (RunStatus.COMPLETED, {"ratio": 0.25})


def test_short_text_with_a_nul_is_a_value_error_saying_what_text_is_allowed(clock):
    run = run_case("nul")

    assert run.status == RunStatus.FAILED
    assert (run.error["type"], run.error["message"]) == (
        "ValueError",
        "search attribute 'note' must be text of at most 1000 characters without NUL",
    )
    assert run.attributes == {}


def test_text_of_exactly_the_limit_is_stored_and_one_more_character_is_refused(clock):
    longest, too_long = run_case("longest_text"), run_case("too_long_text")

    assert (longest.status, len(longest.attributes["note"])) == (RunStatus.COMPLETED, 1000)
    assert (too_long.status, too_long.attributes) == (RunStatus.FAILED, {})


def test_a_short_name_with_a_double_underscore_is_refused(clock):
    run = run_case("double_underscore")

    assert run.status == RunStatus.FAILED
    assert run.error["message"] == (
        "search attribute name 'a__b' must be an identifier of at most "
        "64 characters without a double underscore"
    )


def test_a_name_of_exactly_the_longest_length_is_stored(clock):
    run = run_case("longest_name")

    assert (run.status, run.attributes) == (RunStatus.COMPLETED, {"n" * 64: 1})


def test_setting_attributes_is_journaled_as_a_completed_entry(waiting_run):
    entry = JournalEntry.objects.get(run_id=waiting_run.id, kind=EntryKind.ATTRIBUTES)

    assert (entry.name, entry.status) == ("attributes", "completed")


def test_a_crash_loop_at_setting_attributes_names_them_in_its_reason(clock, settings):
    settings.DURABLE_CRASH_LOOP_LIMIT = 3
    run = services.run_start(attributed_onboarding, "1", id="attr:crash-loop", actor="test")
    as_if_its_worker_died(run, takeovers=2, at=0)

    run = drive(run.id)

    assert run.status == RunStatus.BLOCKED
    assert run.error["message"].startswith("crash loop at attributes 'attributes' (position 0)")
    assert attribute_entries(run.id) == 0
