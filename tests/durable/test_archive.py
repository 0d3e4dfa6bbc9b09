"""Retention: durable archive moves finished runs out of the hot tables, keeps the audit chains
verifiable, and leaves every archived run readable (admin, API, export, replay)."""

import gzip
import io
import json
from datetime import timedelta

import pytest
from django.contrib.admin.utils import quote
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connection, transaction
from django.urls import reverse

from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.services import approval_decide
from durable import services
from durable.durations import parse_age
from durable.errors import RunArchived
from durable.features import archive, history
from durable.models import AuditEvent, JournalEntry, RunStatus, Signal, WorkflowRun
from durable.models.archive import (
    ArchiveBatch,
    ArchivedAuditEvent,
    ArchivedJournalEntry,
    ArchivedRun,
    ArchivedSignal,
)
from durable.surfaces import checks
from durable.testing import drive, override_workflow
from tests.approvals.conftest import make_user, start_case
from tests.durable.test_admin import staff_with
from tests.durable.test_api import client_for, user_with
from tests.durable.workflows import a_then_b

pytestmark = pytest.mark.django_db
on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="PostgreSQL's trigger and row locks"
)


def durable(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command("durable", *argv, stdout=out)
    except SystemExit as exit_:
        return exit_.code, out.getvalue()
    return 0, out.getvalue()


def finished_run(run_id: str, *, signal: bool = True) -> WorkflowRun:
    """A run of a_then_b that went all the way: two steps, a wait, a signal, done."""
    with override_workflow(a_then_b, name="reorder"):
        run = services.run_start("reorder", id=run_id, actor="ana")
        drive(run.id)
        if signal:
            services.signal_send(
                run.id, "go", {"by": "ana"}, dedupe_key=f"go-{run_id}", actor="ana"
            )
            drive(run.id)
    return WorkflowRun.objects.get(pk=run_id)


@pytest.fixture
def reorder():
    with override_workflow(a_then_b, name="reorder"):
        yield


@pytest.fixture
def old_runs(clock, reorder):
    """Three completed runs that finished 100 days ago (the clock then moves to today)."""
    runs = [finished_run(f"reorder:{n}") for n in range(3)]
    clock.advance(timedelta(days=100))
    return runs


def archive_now(*extra: str) -> str:
    code, output = durable("archive", "--finished-before", "90d", *extra)
    assert code == 0, output
    return output


def verify_audit() -> tuple[int, str]:
    return durable("audit", "verify")


# --- what is taken ---


def test_final_statuses_are_those_no_transition_of_the_state_machine_leaves():
    finals = archive.final_statuses()

    for status in RunStatus.values:
        leaves = list(WorkflowRun(status=status).get_available_status_transitions())
        assert (status in finals) == (not leaves), status
    assert RunStatus.COMPLETED in finals and RunStatus.FAILED not in finals  # failed can be retried


def test_archive_moves_a_finished_run_with_its_journal_signals_and_audit(old_runs):
    run = old_runs[0]
    journal = list(
        JournalEntry.objects.filter(run_id=run.id).order_by("position").values_list("id", "name")
    )
    signals = list(Signal.objects.filter(run_id=run.id).values_list("id", "name"))
    audit = list(
        AuditEvent.objects.filter(run_id=run.id).order_by("chain_seq").values_list("id", "action")
    )

    archive_now()

    assert not WorkflowRun.objects.filter(pk=run.id).exists()
    assert not JournalEntry.objects.filter(run_id=run.id).exists()
    assert ArchivedRun.objects.get(pk=run.id).result == run.result
    assert (
        list(
            ArchivedJournalEntry.objects.filter(run_id=run.id)
            .order_by("position")
            .values_list("id", "name")
        )
        == journal
    )
    assert list(ArchivedSignal.objects.filter(run_id=run.id).values_list("id", "name")) == signals
    assert (
        list(
            ArchivedAuditEvent.objects.filter(run_id=run.id)
            .order_by("chain_seq")
            .values_list("id", "action")
        )[:-1]
        == audit
    )


def test_each_archived_chain_ends_with_an_archive_event_naming_who_archived_it(old_runs):
    archive_now()

    last = ArchivedAuditEvent.objects.filter(run_id=old_runs[0].id).order_by("-chain_seq").first()
    assert last.action == "archive"
    assert last.actor.startswith("cli:")
    assert ArchiveBatch.objects.get(token=last.detail["batch"]).detail["via"] == "cli"


def test_runs_that_finished_after_the_cutoff_or_are_still_going_stay(clock, reorder):
    old = finished_run("reorder:old")
    clock.advance(timedelta(days=95))
    recent = finished_run("reorder:recent")
    waiting = finished_run("reorder:waiting", signal=False)

    archive_now()

    assert ArchivedRun.objects.filter(pk=old.id).exists()
    assert set(WorkflowRun.objects.values_list("id", flat=True)) == {recent.id, waiting.id}


def test_a_failed_run_stays_because_it_can_still_be_retried(clock):
    run = drive(services.run_start("fails_in_body", id="fails:1", actor="test").id)
    clock.advance(timedelta(days=100))

    archive_now()

    assert run.status == RunStatus.FAILED
    assert WorkflowRun.objects.filter(pk=run.id).exists()


def test_dry_run_counts_per_workflow_and_moves_nothing(old_runs):
    output = archive_now("--dry-run")

    assert ["reorder", "3"] in [line.split() for line in output.splitlines()]
    assert "3 completed/cancelled/continued run(s)" in output
    assert WorkflowRun.objects.count() == 3 and ArchivedRun.objects.count() == 0


def test_runs_go_in_batches_of_the_given_size(old_runs):
    output = archive_now("--batch-size", "2")

    assert sorted(ArchiveBatch.objects.values_list("runs", flat=True)) == [1, 2]
    assert (
        "archived 3 completed/cancelled/continued run(s)" in output and "in 2 batch(es)" in output
    )


def test_a_bad_age_exits_2_with_the_reason():
    with pytest.raises(CommandError, match="not a duration") as refused:
        durable("archive", "--finished-before", "ninety days")

    assert refused.value.returncode == 2


def test_ages_read_like_the_rule():
    assert [parse_age(text) for text in ("90d", "12h", "2w", "30m", "45s", "10")] == [
        timedelta(days=90),
        timedelta(hours=12),
        timedelta(weeks=2),
        timedelta(minutes=30),
        timedelta(seconds=45),
        timedelta(seconds=10),
    ]


# --- the audit chain ---


def test_audit_verify_passes_after_archiving(old_runs):
    rows = AuditEvent.objects.count() + len(old_runs)  # plus one archive event per run
    archive_now()

    code, output = verify_audit()

    assert code == 0, output
    assert (
        f"durable_archivedauditevent: {rows} row(s) in 3 chain(s); append-only trigger enabled"
        in output
    )


def test_chains_archived_after_their_heads_were_exported_verify_against_them(
    old_runs, settings, tmp_path
):
    settings.DURABLE_AUDIT_HEADS_FILE = str(tmp_path / "heads.jsonl")
    rows = AuditEvent.objects.count() + len(old_runs)  # plus one archive event per run
    durable("audit", "export-heads")
    archive_now()

    code, output = durable("audit", "verify", "--against", str(tmp_path / "heads.jsonl"))

    assert code == 0, output
    assert f"durable_archivedauditevent: {rows} row(s) in 3 chain(s)" in output


def test_audit_verify_passes_after_exporting(old_runs, tmp_path):
    archive_now("--export", str(tmp_path))

    code, output = verify_audit()

    assert code == 0, output


def test_an_altered_archived_audit_row_breaks_its_chain(old_runs):
    from tests.durable.test_audit_chain import tampered

    archive_now()
    row = ArchivedAuditEvent.objects.filter(run_id=old_runs[0].id).order_by("chain_seq").first()
    tampered(
        "durable_archivedauditevent",
        "UPDATE durable_archivedauditevent SET actor = %s WHERE id = %s",
        ["mallory", row.id],
    )

    code, output = verify_audit()

    assert code == 1
    assert "durable_archivedauditevent" in output and "altered" in output


@on_postgresql
def test_an_audit_row_cannot_be_deleted_unless_its_copy_is_in_the_archive(old_runs):
    event = AuditEvent.objects.filter(run_id=old_runs[0].id).first()

    with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM durable_auditevent WHERE id = %s", [event.id])


# --- export files ---


def test_export_writes_gzip_json_lines_and_keeps_a_tombstone_and_the_audit_chain(
    old_runs, tmp_path
):
    audit_rows = AuditEvent.objects.filter(run_id=old_runs[0].id).count()
    archive_now("--export", str(tmp_path))

    files = sorted(tmp_path.glob("runs-*.jsonl.gz"))
    lines = [json.loads(line) for path in files for line in gzip.open(path, "rt")]
    assert sorted(line["run"]["id"] for line in lines) == sorted(run.id for run in old_runs)
    assert all(line["journal"] and line["signals"] and line["audit"] for line in lines)
    tombstone = ArchivedRun.objects.get(pk=old_runs[0].id)
    assert tombstone.input is None and tombstone.batch.export_file == str(files[0])
    assert not ArchivedJournalEntry.objects.exists() and not JournalEntry.objects.exists()
    assert ArchivedAuditEvent.objects.filter(run_id=old_runs[0].id).count() == audit_rows + 1


def test_the_export_file_is_what_its_batch_recorded(old_runs, tmp_path):
    import hashlib

    archive_now("--export", str(tmp_path))

    batch = ArchiveBatch.objects.get()
    assert hashlib.sha256(open(batch.export_file, "rb").read()).hexdigest() == batch.export_sha256


def test_a_partial_file_of_a_batch_that_never_committed_is_removed_by_the_next_pass(
    old_runs, tmp_path
):
    leftover = tmp_path / "runs-20260101T000000-0123456789abcdef0123456789abcdef.jsonl.gz.partial"
    leftover.write_bytes(b"killed half-way")

    archive_now("--export", str(tmp_path))

    assert not leftover.exists()
    assert len(list(tmp_path.glob("*.jsonl.gz"))) == 1


def test_a_partial_file_of_a_committed_batch_is_completed_by_the_next_pass(old_runs, tmp_path):
    archive_now("--export", str(tmp_path))
    final = next(tmp_path.glob("*.jsonl.gz"))
    final.rename(str(final) + archive.PARTIAL)  # killed between the commit and the rename

    archive.recover_exports(tmp_path)

    assert final.exists() and not list(tmp_path.glob("*.partial"))


def test_a_batch_that_fails_rolls_back_whole_and_removes_its_file(old_runs, tmp_path, clock):
    from django.db import IntegrityError

    archive_now()
    again = WorkflowRun.objects.create(  # the same id back in the hot table
        id=old_runs[0].id,
        workflow_name="reorder",
        input=old_runs[0].input,
        status=RunStatus.COMPLETED,
        created_at=clock.now() - timedelta(days=99),
        updated_at=clock.now() - timedelta(days=99),
        finished_at=clock.now() - timedelta(days=99),
    )

    with pytest.raises(IntegrityError):
        archive.archive_pass(
            finished_before=archive.cutoff("90d"), actor="test", export_dir=tmp_path
        )

    assert WorkflowRun.objects.filter(pk=again.id).exists()
    assert ArchiveBatch.objects.count() == 1 and not list(tmp_path.iterdir())


# --- reading an archived run ---


def test_durable_export_of_an_archived_run_is_the_document_it_had_when_live(old_runs, tmp_path):
    before = history.history_export(old_runs[0].id)

    archive_now()

    assert history.history_export(old_runs[0].id) == before


def test_durable_export_of_an_exported_run_reads_it_back_from_its_file(old_runs, tmp_path):
    before = history.history_export(old_runs[0].id)

    archive_now("--export", str(tmp_path / "exports"))

    assert history.history_export(old_runs[0].id) == before


def test_replay_works_on_archived_runs(old_runs, reorder):
    archive_now()

    code, output = durable("replay", "--archived", "--workflow", "reorder")

    assert code == 0, output
    assert "replayed 3 histories: 3 ok, 0 failed" in output


def test_replay_works_on_exported_runs_from_the_database_and_from_the_files(
    old_runs, reorder, tmp_path
):
    archive_now("--export", str(tmp_path))

    from_database = durable("replay", "--archived", "--status", "completed")
    from_files = durable("replay", str(tmp_path))

    assert from_database[0] == 0 and "replayed 3 histories: 3 ok" in from_database[1]
    assert from_files[0] == 0 and "replayed 3 histories: 3 ok" in from_files[1]


def test_replay_of_an_archived_run_still_catches_a_divergence(old_runs):
    from tests.durable.workflows import b_then_a

    archive_now()

    with override_workflow(b_then_a, name="reorder"):
        code, output = durable("replay", "--archived", "--workflow", "reorder")

    assert code == 1 and "diverges at position" in output


def test_starting_an_archived_id_again_is_refused(old_runs):
    archive_now()

    with pytest.raises(RunArchived, match="archived"):
        services.run_start("reorder", id=old_runs[0].id, actor="test")
    assert not WorkflowRun.objects.filter(pk=old_runs[0].id).exists()


def test_the_api_run_detail_falls_back_to_the_archive(old_runs):
    client = client_for(user_with("view_workflowrun"))
    archive_now()

    body = client.get(reverse("api-run", args=[old_runs[0].id])).json()

    assert body["status"] == "completed" and body["result"] == old_runs[0].result
    assert [entry["name"] for entry in body["journal"]] == ["a", "go", "b"]
    assert body["signals"][0]["name"] == "go"
    assert body["archived"]["export_file"] is None


def test_the_api_shows_an_exported_run_from_its_file(old_runs, tmp_path):
    client = client_for(user_with("view_workflowrun"))
    archive_now("--export", str(tmp_path))

    body = client.get(reverse("api-run", args=[old_runs[0].id])).json()

    assert body["input"] == old_runs[0].input and len(body["journal"]) == 3
    assert body["archived"]["export_file"].endswith(".jsonl.gz")


def test_the_api_refuses_an_archived_run_to_a_user_without_view_permission(old_runs):
    client = client_for(user_with(username="nobody"))
    archive_now()

    assert client.get(reverse("api-run", args=[old_runs[0].id])).status_code == 403


def test_the_admin_shows_an_archived_run_read_only_with_journal_signals_and_audit(client, old_runs):
    staff_with(client, "view_workflowrun")
    archive_now()

    page = client.get(
        reverse("admin:durable_archivedrun_change", args=[quote(old_runs[0].id)])
    ).content.decode()

    for text in [
        'id="durable-journal"',
        "<code>a</code>",
        "<code>go</code>",
        'id="durable-audit"',
        ">archived<",
        "the archive tables",
    ]:
        assert text in page
    assert "Cancel run" not in page and 'name="_save"' not in page


def test_the_admin_lists_archived_runs_and_finds_one_by_its_attributes(client, clock, reorder):
    staff_with(client, "view_workflowrun")
    run = finished_run("reorder:attr")
    WorkflowRun.objects.filter(pk=run.id).update(attributes={"cnpj": "11222333000181"})
    clock.advance(timedelta(days=100))
    archive_now()

    page = client.get(
        reverse("admin:durable_archivedrun_changelist"), {"q": "11222333000181"}
    ).content.decode()

    assert reverse("admin:durable_archivedrun_change", args=[quote(run.id)]) in page


def test_the_admin_refuses_archived_runs_to_staff_without_view_permission(client, old_runs):
    staff_with(client, username="stranger")
    archive_now()

    response = client.get(reverse("admin:durable_archivedrun_change", args=[quote(old_runs[0].id)]))

    assert response.status_code == 403


# --- rows of other apps ---


def test_every_relation_to_runs_is_moved_or_kept_without_a_database_constraint():
    kept = {
        f"{r.related_model._meta.label}.{r.field.name}": r.field.db_constraint
        for r in archive.kept_relations()
    }

    assert kept.get("approvals.ApprovalRequest.run") is False
    assert not any(kept.values()), f"a kept relation with a constraint holds its runs hot: {kept}"


def test_an_approval_case_stays_and_its_page_shows_the_archived_run(clock):
    ana = make_user("ana", reviewer=True)
    case = start_case("acme")
    approval_decide(case.pk, actor=ana, outcome="approve", reason="ok")
    drive(case.run_id)
    clock.advance(timedelta(days=100))

    archive_now()

    from tests.approvals.test_views import signed_in

    page = (
        signed_in(make_user("carla", reviewer=True))
        .get(reverse("approval_case", args=[case.pk]))
        .content.decode()
    )
    assert ApprovalRequest.objects.get(pk=case.pk).status == ApprovalStatus.APPROVED
    assert ArchivedRun.objects.filter(pk=case.run_id).exists()
    assert "The run is completed." in page and f'<code class="run-id">{case.run_id}</code>' in page
    assert "open_approval_request" in page  # the timeline, read from the archive


# --- the retention policy ---


def test_retention_is_off_by_default(old_runs, settings):
    settings.DURABLE_RETENTION = None

    assert archive.retention_pass() is None
    assert WorkflowRun.objects.count() == 3


def test_a_retention_pass_archives_at_most_max_runs(old_runs, settings):
    settings.DURABLE_RETENTION = {
        "finished_before": "90d",
        "export": None,
        "batch_size": 1,
        "max_runs": 2,
    }

    report = archive.retention_pass()

    assert report.runs == 2 and WorkflowRun.objects.count() == 1
    assert ArchivedAuditEvent.objects.filter(action="archive").first().actor == "beat:retention"


def test_beat_schedules_the_retention_task():
    from config.celery import app

    assert app.conf.beat_schedule["durable-retention"]["task"] == "durable.retention"


# --- locks ---


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_run_locked_by_someone_else_is_skipped_and_taken_by_the_next_pass(clock, reorder):
    import threading

    runs = [finished_run(f"reorder:{n}") for n in range(3)]
    clock.advance(timedelta(days=100))
    locked, release = threading.Event(), threading.Event()

    def hold_a_lock():
        from django.db import connections

        with transaction.atomic():
            list(WorkflowRun.objects.select_for_update().filter(pk=runs[1].id).values_list("pk"))
            locked.set()
            release.wait(30)
        connections.close_all()

    holder = threading.Thread(target=hold_a_lock)
    holder.start()
    locked.wait(30)
    first = archive.archive_pass(finished_before=archive.cutoff("90d"), actor="test")
    release.set()
    holder.join()
    second = archive.archive_pass(finished_before=archive.cutoff("90d"), actor="test")

    assert (first.runs, second.runs) == (2, 1)
    assert ArchivedRun.objects.count() == 3


def test_a_retention_policy_beat_could_not_run_fails_the_system_check(settings):
    settings.DURABLE_RETENTION = {"finished_before": "ninety days"}

    problems = checks.check_retention()

    assert [problem.id for problem in problems] == ["durable.E101"]


def test_the_retention_task_runs_one_pass_of_the_policy(old_runs, settings):
    from durable import tasks

    settings.DURABLE_RETENTION = {"finished_before": "90d", "export": None}

    assert tasks.retention() == 3
    assert not WorkflowRun.objects.exists()


@on_postgresql
def test_sizes_reports_rows_and_bytes_per_finished_run_for_each_workflow(old_runs):
    journal_per_run = JournalEntry.objects.count() / len(old_runs)

    code, output = durable("sizes")

    rows = {
        (cells[0], cells[2]): cells
        for cells in (line.split() for line in output.splitlines())
        if len(cells) == 6
    }
    assert code == 0, output
    assert float(rows[("reorder", "journal")][3]) == journal_per_run
    assert int(rows[("reorder", "run")][4]) > 0
