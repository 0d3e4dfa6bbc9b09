"""History export and read-only replay: recorded journals must still replay against today's code."""

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

import tests.durable.test_onboarding_example  # noqa: F401  (registers example_onboarding)
from durable import services, workflow
from durable.features import history
from durable.models import JournalEntry
from durable.testing import drive, override_workflow
from tests.durable.workflows import CALLS, a_then_b, b_then_a, record

HISTORIES = Path(__file__).resolve().parent.parent / "histories"
RECORDED = sorted(HISTORIES.glob("*.json"))


def durable_command(*args) -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("durable", *args, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    return 0, out.getvalue()


def a_then_renamed():
    workflow.step(record, "a", name="a")
    workflow.wait_for_signal("go")
    workflow.step(record, "b", name="apply_b")
    return "done"


@pytest.fixture
def finished_run(db, clock):
    """A run of a_then_b that went all the way through, recorded in the database."""
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id="reorder:1", actor="test")
        drive(run.id)
        services.signal_send(run.id, "go", {"by": "ana"}, dedupe_key="go-1", actor="test")
        drive(run.id)
    CALLS.clear()
    return run


def _export(run, tmp_path) -> Path:
    path = tmp_path / f"{run.id.replace(':', '-')}.json"
    code, _ = durable_command("export", run.id, "-o", str(path))
    assert code == 0
    return path


@pytest.fixture
def exported(finished_run, tmp_path) -> Path:
    return _export(finished_run, tmp_path)


# --- the recorded histories in tests/histories/ ---


def test_there_are_recorded_histories():
    assert len(RECORDED) >= 5


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_every_recorded_history_replays_against_the_current_code(path):
    report = history.history_replay(history.history_load(path))

    assert report.ok, f"{report.summary}\n{report.diff}"


def test_the_replay_command_accepts_the_histories_folder():
    code, output = durable_command("replay", str(HISTORIES))

    assert code == 0, output
    assert f"replayed {len(RECORDED)} histories: {len(RECORDED)} ok, 0 failed" in output


# --- export ---


def test_export_writes_the_workflow_its_input_journal_and_signals(exported):
    document = json.loads(exported.read_text())

    assert document["format"] == history.FORMAT
    assert (document["run"]["workflow_name"], document["run"]["workflow_version"]) == ("reorder", 1)
    assert document["run"]["input"] == {"args": [], "kwargs": {}}
    assert [(e["position"], e["kind"], e["name"]) for e in document["journal"]] == [
        (0, "step", "a"),
        (1, "signal", "go"),
        (2, "step", "b"),
    ]
    assert [(s["name"], s["payload"], s["consumed_position"]) for s in document["signals"]] == [
        ("go", {"by": "ana"}, 1)
    ]


def test_export_to_standard_output_is_the_same_document(finished_run, exported):
    code, output = durable_command("export", finished_run.id)

    assert json.loads(output) == json.loads(exported.read_text())


@pytest.mark.django_db
def test_exporting_an_unknown_run_is_a_clear_error():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no run with id 'nope'"):
        call_command("durable", "export", "nope")


# --- replay ---


def test_an_unchanged_workflow_replays_green(exported):
    with override_workflow(a_then_b, name="reorder"):
        code, output = durable_command("replay", str(exported))

    assert code == 0, output
    assert "ok    " in output and "3 journal entries replay; the code returns" in output


def test_a_reordered_workflow_fails_replay_with_a_diff_naming_both_positions(exported):
    with override_workflow(b_then_a, name="reorder"):
        code, output = durable_command("replay", str(exported))

    assert code == 1
    assert "FAIL" in output and "diverges at position 0" in output
    assert "expected (journal, position 0): step 'a'" in output
    assert "found    (code,    position 0): step 'b'" in output
    assert "the journal recorded step 'b' at position 2" in output
    assert "1 failed" in output


def test_a_renamed_step_fails_replay_and_says_it_was_never_recorded(exported):
    with override_workflow(a_then_renamed, name="reorder"):
        code, output = durable_command("replay", str(exported))

    assert code == 1
    assert "diverges at position 2" in output
    assert "the journal never recorded step 'apply_b'" in output


def test_replay_runs_no_step_and_touches_no_database(exported):
    recorded = history.history_load(exported)

    with override_workflow(a_then_b, name="reorder"), CaptureQueriesContext(connection) as queries:
        report = history.history_replay(recorded)

    assert report.ok
    assert CALLS == {}
    assert len(queries) == 0


def test_a_body_that_queries_the_database_fails_replay(exported):
    def queries_in_body():
        JournalEntry.objects.filter(run_id="reorder:1").count()  # durable: allow (past strict mode)
        return a_then_b()

    with override_workflow(queries_in_body, name="reorder"):
        report = history.history_replay(history.history_load(exported))

    assert not report.ok
    assert "queried the database" in report.summary


def test_a_history_that_ends_in_a_wait_is_success(db, clock, tmp_path):
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id="reorder:waiting", actor="test")
        drive(run.id)
        durable_command("export", run.id, "-o", str(tmp_path / "waiting.json"))

        report = history.history_replay(history.history_load(tmp_path / "waiting.json"))

    assert report.ok
    assert "at position 1 the run was waiting there (signal 'go')" in report.summary


def test_code_that_stops_before_the_end_of_the_journal_fails_replay(exported):
    with override_workflow(lambda: workflow.step(record, "a", name="a"), name="shorter"):
        recorded = history.history_load(exported)
        recorded.run.workflow_name = "shorter"

        report = history.history_replay(recorded)

    assert not report.ok
    assert "nothing more (the workflow returned)" in report.diff


def test_a_history_of_an_unregistered_version_fails(exported):
    recorded = history.history_load(exported)
    recorded.run.workflow_version = 9

    with override_workflow(a_then_b, name="reorder"):
        report = history.history_replay(recorded)

    assert not report.ok
    assert "has no version 9" in report.summary


def test_a_file_that_is_not_a_history_fails_the_command(db, tmp_path):
    path = tmp_path / "notes.json"
    path.write_text('{"hello": 1}')

    code, output = durable_command("replay", str(path))

    assert code == 1
    assert "cannot read the history" in output


@pytest.mark.django_db
def test_replay_without_anything_to_replay_says_so():
    code, output = durable_command("replay")

    assert code == 2
    assert "nothing to replay" in output


# --- live runs ---


def test_live_waiting_runs_replay_from_the_database(db, clock):
    with override_workflow(a_then_b, name="reorder"):
        for n in range(3):
            drive(services.run_start("reorder", id=f"reorder:live-{n}", actor="test").id)

        code, output = durable_command("replay", "--workflow", "reorder", "--status", "waiting")

    assert code == 0, output
    assert "replayed 3 histories: 3 ok, 0 failed" in output


def test_live_runs_that_the_new_code_would_block_are_reported(db, clock):
    with override_workflow(a_then_b, name="reorder"):
        drive(services.run_start("reorder", id="reorder:live", actor="test").id)

    with override_workflow(b_then_a, name="reorder"):
        code, output = durable_command("replay", "--workflow", "reorder", "--status", "waiting")

    assert code == 1
    assert "run reorder:live" in output and "diverges at position 0" in output
    assert list(
        JournalEntry.objects.filter(run_id="reorder:live")
        .order_by("position")
        .values_list("name", "status")
    ) == [("a", "completed"), ("go", "waiting")]


# --- patched() in replay ---


def a_then_b_with_patch():
    workflow.step(record, "a", name="a")
    if workflow.patched("extra-step"):
        workflow.step(record, "extra", name="extra")
    workflow.wait_for_signal("go")
    workflow.step(record, "b", name="b")
    return "done"


def test_histories_from_before_and_after_a_patch_both_replay(exported, tmp_path):
    with override_workflow(a_then_b_with_patch, name="reorder"):
        patched_run = services.run_start("reorder", id="reorder:patched", actor="test")
        drive(patched_run.id)
        durable_command("export", patched_run.id, "-o", str(tmp_path / "patched.json"))

        code, output = durable_command("replay", str(exported), str(tmp_path / "patched.json"))

    assert code == 0, output
    assert "replayed 2 histories: 2 ok, 0 failed" in output
    assert [e["name"] for e in json.loads((tmp_path / "patched.json").read_text())["journal"]] == [
        "a",
        "extra-step",
        "extra",
        "go",
    ]


# A sleep still ahead, a sleep due by the time of the replay, a wait past its deadline: the
# replay stops where the run waited, and says where.
@pytest.mark.parametrize(
    "workflow_name, later",
    [
        ("nap", timedelta(0)),
        ("nap", timedelta(hours=2)),
        ("wait_with_deadline", timedelta(days=8)),
    ],
    ids=["asleep", "sleep-due", "wait-expired"],
)
def test_a_history_that_ends_at_a_timer_ends_its_replay_at_the_timer_s_position(
    db, clock, tmp_path, workflow_name, later
):
    run = services.run_start(workflow_name, id=f"history:timer:{workflow_name}", actor="test")
    drive(run.id)
    path = _export(run, tmp_path)
    clock.advance(later)

    report = history.history_replay(history.history_load(path))

    assert report.ok
    assert "at position 0 the run was waiting there" in report.summary


def test_a_history_that_ends_in_a_step_s_back_off_ends_its_replay_at_the_step_s_position(
    db, clock, tmp_path
):
    run = drive(
        services.run_start("gives_up", id="history:backoff", actor="test").id
    )  # the first attempt failed
    path = _export(run, tmp_path)

    report = history.history_replay(history.history_load(path))

    assert report.ok
    assert "0 journal entries replay; at position 0" in report.summary, report.summary
