"""The evidence pack of a decided case (issue 36, item 5): what it holds, that it verifies from
the file alone and that one changed byte anywhere does not, who may download it, and that every
download is in the case's audit trail."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
from django.core.files.base import ContentFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from approvals import workflow as approvals_workflow
from approvals.errors import EvidenceNotReady, NotDecided
from approvals.evidence.encoding import json_bytes, sha256, zip_bytes, zip_members
from approvals.evidence.verify import DECISION_STEPS, verify_pack
from approvals.models import ApprovalAudit, ApprovalRequest
from approvals.services import AUDITOR_GROUP, approval_decide, approval_evidence_take
from durable import services as durable_services
from durable.testing import drive
from processes.onboarding.models import Document, DocumentKind
from tests.approvals.conftest import make_user
from tests.approvals.test_views import signed_in
from tests.processes.conftest import api_client, customer, in_review, make_reviewer, signed_post  # noqa: F401
from tests.support import ROOT

pytestmark = pytest.mark.django_db

REASON = "contract, address and selfie check out"


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    return tmp_path


@pytest.fixture
def rita(db):
    """A KYC reviewer: onboarding routes its cases to her groups."""
    return make_reviewer("rita")


@pytest.fixture
def open_case(media, in_review) -> ApprovalRequest:
    """An onboarding case waiting for compliance, its three documents stored."""
    return ApprovalRequest.objects.get(run_id=in_review.id)


@pytest.fixture
def decided_case(open_case, rita) -> ApprovalRequest:
    """Approved by rita with a reason; the run took the decision and went on."""
    approval_decide(open_case.pk, actor=rita, outcome="approve", reason=REASON)
    drive(open_case.run_id)
    open_case.refresh_from_db()
    return open_case


@pytest.fixture
def pack(decided_case) -> bytes:
    return approval_evidence_take(decided_case.pk, actor="test", via="test").content


def member(pack: bytes, name: str):
    content = dict(zip_members(pack))[name]
    return json.loads(content) if name.endswith(".json") else content


def document_names(pack: bytes) -> list[str]:
    return [name for name, _content in zip_members(pack) if name.startswith("documents/")]


def with_one_byte_changed(pack: bytes, name: str) -> bytes:
    """The pack written again, as a pack is written, with one byte of member ``name`` flipped."""
    rewritten = []
    for found, content in zip_members(pack):
        if found == name:
            at = len(content) // 2
            content = content[:at] + bytes([content[at] ^ 0x01]) + content[at + 1 :]
        rewritten.append((found, content))
    return zip_bytes(rewritten)


def saved(content: bytes, tmp_path) -> str:
    path = tmp_path / "pack.zip"
    path.write_bytes(content)
    return str(path)


# --- what a pack holds ---


def test_the_pack_holds_the_case_and_its_decision_with_the_reviewer_and_the_reason(
    decided_case, pack
):
    case = member(pack, "case.json")

    assert (case["id"], case["status"], case["run"]) == (
        decided_case.pk,
        "approved",
        decided_case.run_id,
    )
    assert [(vote["reviewer"], vote["outcome"], vote["reason"]) for vote in case["decisions"]] == [
        ("rita", "approve", REASON)
    ]
    assert case["summary"]["findings"] == decided_case.summary["findings"]


def test_a_rejected_case_verifies_with_its_reason_in_the_case_the_chain_and_the_journal(
    open_case, rita
):
    approval_decide(
        open_case.pk, actor=rita, outcome="reject", reason="the selfie is not the partner's"
    )
    drive(open_case.run_id)

    pack = approval_evidence_take(open_case.pk, actor="test", via="test").content

    assert verify_pack(pack).verified
    assert member(pack, "case.json")["decisions"][0]["reason"] == "the selfie is not the partner's"
    assert (
        member(pack, "journal.json")["entries"][-1]["result"]["reason"]
        == "the selfie is not the partner's"
    )


def test_the_pack_of_a_decision_the_process_never_took_holds_the_whole_journal_and_verifies(
    open_case, rita
):
    approval_decide(
        open_case.pk, actor=rita, outcome="approve", reason=REASON
    )  # the run has not read it
    durable_services.run_cancel(open_case.run_id, reason="customer withdrew", actor="customer")

    pack = approval_evidence_take(open_case.pk, actor="test", via="test").content

    journal = member(pack, "journal.json")
    assert (member(pack, "case.json")["status"], journal["decision_position"]) == (
        "superseded",
        None,
    )
    assert journal["entries_after_decision"] == 0 and verify_pack(pack).verified


def test_a_decision_the_run_has_not_taken_yet_makes_no_pack_until_it_does(open_case, rita):
    approval_decide(
        open_case.pk, actor=rita, outcome="approve", reason=REASON
    )  # the run has not read it

    with pytest.raises(EvidenceNotReady):
        approval_evidence_take(open_case.pk, actor="test", via="test")

    drive(open_case.run_id)
    assert verify_pack(
        approval_evidence_take(open_case.pk, actor="test", via="test").content
    ).verified


def test_the_pack_holds_every_document_with_its_recorded_sha256_and_its_bytes(decided_case, pack):
    documents = member(pack, "subject/documents.json")

    assert len(documents) == 3 and sorted(document_names(pack)) == sorted(
        d["file"] for d in documents
    )
    for document in documents:
        assert (
            hashlib.sha256(member(pack, document["file"])).hexdigest()
            == document["recorded_sha256"]
        )
        assert document["file_matches_record"] is True


def test_the_pack_holds_the_registry_and_validator_findings_and_the_conversation(pack):
    validation = member(pack, "subject/validation.json")
    conversation = member(pack, "subject/conversation.json")

    assert [step["result"]["missing"] for step in validation][-1] == []
    assert member(pack, "subject/registry.json")[0]["result"]["cnpj"] == "11222333000181"
    assert conversation[0]["inbound"] and "CNPJ" in conversation[0]["text"]
    assert member(pack, "subject/company.json")["cnpj"] == "11.222.333/0001-81"


def test_the_pack_holds_the_journal_up_to_the_decision_and_the_code_that_ran_it(decided_case, pack):
    journal = member(pack, "journal.json")
    last = journal["entries"][-1]

    assert (journal["workflow_name"], journal["workflow_version"]) == ("onboarding", 1)
    assert journal["code"]["definition"].endswith("onboarding")
    assert (last["name"], last["result"]["outcome"], last["result"]["by"]) == (
        "read_decision",
        "approve",
        ["rita"],
    )
    assert journal["entries_after_decision"] > 0  # the account was opened after it: not in the pack


def test_the_pack_holds_the_cases_audit_chain_up_to_its_head(decided_case, pack):
    audit = member(pack, "audit.json")
    rows = list(ApprovalAudit.objects.filter(request=decided_case).order_by("chain_seq"))[
        :-1
    ]  # not the download

    assert [(row["chain_seq"], row["row_hash"]) for row in audit["rows"]] == [
        (r.chain_seq, r.row_hash) for r in rows
    ]
    assert audit["head"] == rows[-1].row_hash == member(pack, "pack.json")["head"]


def test_the_manifest_lists_every_other_file_with_its_sha256_and_size(pack):
    files = dict(zip_members(pack))

    listed = {
        item["name"]: (item["sha256"], item["size"])
        for item in member(pack, "manifest.json")["files"]
    }

    assert listed == {
        name: (sha256(content), len(content))
        for name, content in files.items()
        if name != "manifest.json"
    }


def test_the_pack_knows_the_journaled_names_of_the_steps_that_take_a_decision():
    assert (
        approvals_workflow.read_decision.__name__,
        approvals_workflow.expire_approval_request.__name__,
    ) == DECISION_STEPS


# --- verifying ---


def test_a_pack_verifies_from_the_file_alone(pack, django_assert_num_queries):
    with django_assert_num_queries(0):
        report = verify_pack(pack)

    assert report.problems == []
    assert report.head == member(pack, "audit.json")["head"]


@pytest.mark.parametrize(
    "name",
    [
        "manifest.json",
        "pack.json",
        "case.json",
        "audit.json",
        "journal.json",
        "subject/documents.json",
        "subject/conversation.json",
        "a document",
    ],
)
def test_one_changed_byte_in_any_member_fails_verification(pack, name):
    name = document_names(pack)[0] if name == "a document" else name

    report = verify_pack(with_one_byte_changed(pack, name))

    assert not report.verified
    assert name == "manifest.json" or any(name in problem for problem in report.problems)


def test_one_changed_byte_anywhere_in_the_file_fails_verification(pack):
    passed = [
        at
        for at in range(len(pack))  # every byte: members, their headers, the directory
        if verify_pack(pack[:at] + bytes([pack[at] ^ 0x01]) + pack[at + 1 :]).verified
    ]

    assert passed == []


@pytest.mark.parametrize("damage", ["not a ZIP at all", "cut short"])
def test_a_damaged_file_is_reported_not_raised(pack, damage):
    content = b"a letter, not a pack" if damage == "not a ZIP at all" else pack[: len(pack) // 2]

    report = verify_pack(content)

    assert report.problems and "not a readable ZIP file" in report.problems[0]


def test_a_document_whose_stored_bytes_changed_since_intake_is_named_and_the_pack_does_not_verify(
    decided_case, media
):
    contract = Document.objects.get(kind=DocumentKind.ARTICLES)
    contract.file.storage.delete(contract.file.name)
    contract.file.storage.save(contract.file.name, ContentFile(b"%PDF-1.4 another contract\n"))

    pack = approval_evidence_take(decided_case.pk, actor="test", via="test").content

    recorded = next(d for d in member(pack, "subject/documents.json") if d["id"] == contract.pk)
    assert recorded["file_matches_record"] is False
    assert any(
        "do not hash to the SHA-256 recorded" in problem for problem in verify_pack(pack).problems
    )


def test_a_pack_rebuilt_whole_with_every_hash_recomputed_verifies_offline_not_against_the_database(
    pack, tmp_path, capsys
):
    files = dict(zip_members(pack))
    files["subject/conversation.json"] = json_bytes(
        [{"text": "a conversation that never happened"}]
    )
    listed = [
        {"name": name, "sha256": sha256(content), "size": len(content)}
        for name, content in files.items()
        if name != "manifest.json"
    ]
    files["manifest.json"] = json_bytes({"format": "approvals-evidence/1", "files": listed})
    forged = zip_bytes(list(files.items()))

    assert verify_pack(forged).verified
    with pytest.raises(CommandError):
        call_command(
            "approvals", "evidence", "verify", saved(forged, tmp_path), "--against-database"
        )
    assert "no download of a pack with manifest" in capsys.readouterr().out


# --- the command ---


def test_the_verify_command_prints_verified_with_the_head_and_the_counts(pack, tmp_path, capsys):
    call_command("approvals", "evidence", "verify", saved(pack, tmp_path))

    out = capsys.readouterr().out
    assert out.startswith("verified") and member(pack, "audit.json")["head"] in out
    assert f"{len(zip_members(pack))} files" in out


def test_the_verify_command_names_each_problem_and_fails_with_status_1(pack, tmp_path, capsys):
    changed = with_one_byte_changed(pack, "audit.json")

    with pytest.raises(CommandError) as failed:
        call_command("approvals", "evidence", "verify", saved(changed, tmp_path))

    assert failed.value.returncode == 1
    assert "problem: audit.json does not match its SHA-256" in capsys.readouterr().out


def test_manage_py_exits_non_zero_on_a_changed_pack(pack, tmp_path):
    path = saved(with_one_byte_changed(pack, document_names(pack)[0]), tmp_path)

    done = subprocess.run(
        [sys.executable, "manage.py", "approvals", "evidence", "verify", path],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
    )

    assert done.returncode == 1, done.stdout + done.stderr
    assert "does not hash to" in done.stdout or "does not match its SHA-256" in done.stdout


def test_a_downloaded_pack_verifies_against_the_database(decided_case, rita, tmp_path, capsys):
    pack = signed_in(rita).get(reverse("approval_evidence", args=[decided_case.pk])).content

    call_command("approvals", "evidence", "verify", saved(pack, tmp_path), "--against-database")

    assert "verified (from the audit trail of this database)" in capsys.readouterr().out


def test_the_export_command_writes_a_pack_that_verifies_and_records_the_export(
    decided_case, tmp_path
):
    path = tmp_path / "case.zip"

    call_command("approvals", "evidence", "export", str(decided_case.pk), "-o", str(path))

    row = decided_case.audit.order_by("chain_seq").last()
    assert verify_pack(path.read_bytes()).verified
    assert (row.action, row.actor.startswith("cli:")) == ("evidence_downloaded", True)
    assert row.detail["manifest_sha256"] == sha256(
        dict(zip_members(path.read_bytes()))["manifest.json"]
    )


# --- downloading ---


def test_downloading_a_pack_records_who_took_it_and_its_manifest_in_the_audit_trail(
    decided_case, rita
):
    response = signed_in(rita).get(reverse("approval_evidence", args=[decided_case.pk]))

    row = decided_case.audit.order_by("chain_seq").last()
    manifest = dict(zip_members(response.content))["manifest.json"]
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert (
        response["Content-Disposition"]
        == f'attachment; filename="case-{decided_case.pk}-evidence.zip"'
    )
    assert (row.action, row.actor, row.detail["manifest_sha256"]) == (
        "evidence_downloaded",
        "rita",
        sha256(manifest),
    )
    assert row.prev_hash == member(response.content, "audit.json")["head"]


def test_an_auditor_outside_compliance_downloads_the_pack(decided_case):
    auditor = make_user("otto", reviewer=False, groups=(AUDITOR_GROUP,))

    response = signed_in(auditor).get(reverse("approval_evidence", args=[decided_case.pk]))

    assert response.status_code == 200
    assert decided_case.audit.order_by("chain_seq").last().actor == "otto"


@pytest.mark.parametrize("who", ["a reviewer of other groups", "a user outside compliance"])
def test_who_may_not_see_the_case_gets_403_and_nothing_is_recorded(decided_case, who):
    user = make_user("olga", reviewer=who == "a reviewer of other groups", groups=("billing",))
    rows = decided_case.audit.count()

    response = signed_in(user).get(reverse("approval_evidence", args=[decided_case.pk]))

    assert response.status_code == 403
    assert decided_case.audit.count() == rows


def test_an_anonymous_visitor_is_sent_to_sign_in(client, decided_case):
    response = client.get(reverse("approval_evidence", args=[decided_case.pk]))

    assert response.status_code == 302 and response.url.startswith(reverse("login"))


def test_an_undecided_case_has_no_pack_and_its_refusal_is_not_recorded(open_case, rita):
    rows = open_case.audit.count()

    response = signed_in(rita).get(reverse("approval_evidence", args=[open_case.pk]))

    assert response.status_code == 409 and "decided case only" in response.content.decode()
    assert open_case.audit.count() == rows
    with pytest.raises(NotDecided):
        approval_evidence_take(open_case.pk, actor="test", via="test")


def test_the_case_page_offers_the_pack_once_the_case_is_decided(open_case, rita):
    before = signed_in(rita).get(reverse("approval_case", args=[open_case.pk])).content.decode()
    approval_decide(open_case.pk, actor=rita, outcome="approve")
    drive(open_case.run_id)

    after = signed_in(rita).get(reverse("approval_case", args=[open_case.pk])).content.decode()

    link = reverse("approval_evidence", args=[open_case.pk])
    assert link not in before and link in after
