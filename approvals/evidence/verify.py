"""Checking an evidence pack from its bytes alone: no database is read (``manage.py approvals
evidence verify`` runs it offline).

A pack verifies when the file is the canonical ZIP of its members; the manifest lists every
member with its SHA-256 and size; each file its process recorded a SHA-256 for still hashes to
it; the audit chain links from the genesis to the head, every hash recomputed; each decision
is in the chain; and the journal ends at the run taking this case's decision. It does not
prove the pack is the case's as the database holds it: a forger who rebuilds every member and
hash makes a pack that verifies. The head and the manifest's SHA-256 it prints are what to
compare with the case's audit trail (``--against-database``).
"""

import json
from dataclasses import dataclass, field

from approvals.evidence.encoding import json_bytes, sha256, zip_bytes, zip_members
from durable.chain import GENESIS, link_digest, values_body

FORMAT = "approvals-evidence/1"
MANIFEST = "manifest.json"
PACK, CASE, AUDIT, JOURNAL = "pack.json", "case.json", "audit.json", "journal.json"
SUBJECT = "subject/"
# The journaled names of approvals.workflow's steps that take a case's decision: read_decision
# returns it, expire_approval_request hands over one that came just before the deadline.
DECISION_STEPS = ("read_decision", "expire_approval_request")
MANIFEST_KEYS = {"name", "sha256", "size"}


def decision_of(step_name: str, result) -> dict:
    """The decision a decision step's recorded result carries ({} if none)."""
    result = result if isinstance(result, dict) else {}
    if step_name == "expire_approval_request":
        result = result.get("decision") or {}
    return result if isinstance(result, dict) else {}


@dataclass
class Verification:
    """What a check found: ``problems`` empty means the pack verified."""

    problems: list[str] = field(default_factory=list)
    case_id: int | None = None
    manifest_sha256: str = ""
    head: str = ""
    files: int = 0
    audit_links: list[tuple[int, str]] = field(default_factory=list)  # (chain_seq, row_hash)
    journal_entries: int = 0
    decision_position: int | None = None

    @property
    def verified(self) -> bool:
        return not self.problems


def verify_pack(content: bytes) -> Verification:
    """Every problem found in a pack's bytes (none: it verified). Never raises on a damaged file:
    whatever it holds is reported as a problem."""
    report = Verification()
    try:
        members = zip_members(content)
    except Exception as exc:  # whatever zipfile makes of a damaged file, it is not a pack
        report.problems.append(f"not a readable ZIP file: {exc}")
        return report
    files = dict(members)
    report.files = len(files)
    if len(files) != len(members):
        report.problems.append("a member name appears twice in the archive")
    elif not _is_canonical(members, content):
        report.problems.append(
            "the file's bytes differ from the ZIP its members make: "
            "bytes outside the members were changed"
        )
    if MANIFEST in files:
        report.manifest_sha256 = sha256(files[MANIFEST])
    read = _Read(
        files, *(_json(files, name, report) for name in (MANIFEST, PACK, CASE, AUDIT, JOURNAL))
    )
    for name in files:
        if name.startswith(SUBJECT):
            _json(files, name, report)
    for check, needs in CHECKS:
        if all(getattr(read, part) is not None for part in needs):
            try:
                check(read, report)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                report.problems.append(
                    f"{check.__name__.removeprefix('_check_')}: a field is missing or "
                    f"of the wrong type ({exc!r})"
                )
    return report


@dataclass
class _Read:
    """The pack's members, and its JSON members parsed (None: missing or not JSON)."""

    files: dict
    manifest: dict | None
    about: dict | None
    case: dict | None
    audit: dict | None
    journal: dict | None


def _json(files: dict, name: str, report: Verification):
    if name not in files:
        report.problems.append(f"{name} is missing")
        return None
    try:
        value = json.loads(files[name].decode())
        canonical = json_bytes(value) == files[name]
    except (
        UnicodeDecodeError,
        ValueError,
        RecursionError,
    ) as exc:  # NaN is JSON to json.loads, not to a pack
        report.problems.append(f"{name} is not JSON as a pack writes it: {exc}")
        return None
    if not canonical:
        report.problems.append(f"{name} is not written as a pack writes JSON: it was edited")
    return value


def _is_canonical(members: list[tuple[str, bytes]], content: bytes) -> bool:
    try:
        return zip_bytes(members) == content
    except ValueError:  # a member name zipfile will not write
        return False


def _check_manifest(read: _Read, report: Verification) -> None:
    manifest, files = read.manifest, read.files
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if (
        not isinstance(listed, list)
        or manifest.get("format") != FORMAT
        or not all(isinstance(item, dict) and set(item) == MANIFEST_KEYS for item in listed)
    ):
        report.problems.append(f"{MANIFEST} is not a {FORMAT} manifest")
        return
    seen = set()
    for item in listed:
        name = item["name"]
        if name in seen:
            report.problems.append(f"{MANIFEST} lists {name} twice")
        seen.add(name)
        if name not in files:
            report.problems.append(f"{name} is listed in {MANIFEST} but missing from the pack")
        elif sha256(files[name]) != item["sha256"] or len(files[name]) != item["size"]:
            report.problems.append(f"{name} does not match its SHA-256 and size in {MANIFEST}")
    for name in sorted(set(files) - seen - {MANIFEST}):
        report.problems.append(f"{name} is in the pack but not listed in {MANIFEST}")


def _check_about(read: _Read, report: Verification) -> None:
    about, case, audit = read.about, read.case, read.audit
    report.case_id = about["case"]
    if about["format"] != FORMAT:
        report.problems.append(f"{PACK} names format {about['format']!r}, not {FORMAT!r}")
    if case["id"] != about["case"]:
        report.problems.append(f"{CASE} is case #{case['id']}, {PACK} says #{about['case']}")
    if about["head"] != audit["head"]:
        report.problems.append(f"{PACK} names head {about['head']}, {AUDIT} {audit['head']}")


def _check_files(read: _Read, report: Verification) -> None:
    files = read.files
    for item in read.about["files"]:
        name, recorded = item["name"], item["recorded_sha256"]
        if name not in files:
            report.problems.append(f"{name} is named in {PACK} but missing from the pack")
        elif recorded and sha256(files[name]) != recorded:
            report.problems.append(
                f"{name}: its bytes do not hash to the SHA-256 recorded when it was received "
                f"({recorded})"
            )


def _check_audit(read: _Read, report: Verification) -> None:
    """Every link recomputed as durable.chain computes it: [chain_seq, case id, *chained values]."""
    audit, case = read.audit, read.case
    fields, prev, parent = audit["chained_fields"], GENESIS, str(case["id"])
    if audit["genesis"] != GENESIS:
        report.problems.append(f"{AUDIT} starts from {audit['genesis']}, not the genesis")
    for expected_seq, row in enumerate(audit["rows"], start=1):
        seq = row["chain_seq"]
        if seq != expected_seq:
            problem = f"expected seq {expected_seq}, found {seq} (a row is missing or was inserted)"
        elif row["case"] != parent:
            problem = f"it belongs to case {row['case']}, not {parent}"
        elif row["prev_hash"] != prev:
            problem = "its previous-hash does not match the row before it"
        elif (
            link_digest(prev, values_body([seq, row["case"], *(row[name] for name in fields)]))
            != row["row_hash"]
        ):
            problem = "its content does not match its hash (the row was altered)"
        else:
            problem = ""
        if problem:
            report.problems.append(f"{AUDIT}: the chain breaks at seq {expected_seq}: {problem}")
            return
        report.audit_links.append((seq, row["row_hash"]))
        prev = row["row_hash"]
    if audit["head"] != prev:
        report.problems.append(f"{AUDIT} names head {audit['head']}, its last row ends at {prev}")
    report.head = prev


def _check_decisions(read: _Read, report: Verification) -> None:
    """Each decision of case.json is a row of the chain: same reviewer, outcome and reason."""
    case, audit = read.case, read.audit
    rows = {(row["actor"], row["action"], row["reason"]) for row in audit["rows"]}
    for vote in case["decisions"]:
        if (vote["reviewer"], vote["outcome"], vote["reason"]) not in rows:
            report.problems.append(
                f"{CASE}: {vote['reviewer']}'s decision ({vote['outcome']}) "
                "is not in the audit chain"
            )
    # The row that gave the case its status: the final decision's, or the supersession's after it.
    closing = "supersede" if case["status"] == "superseded" else case["outcome"]
    if not any(
        row["action"] == closing and row["to_status"] == case["status"] for row in audit["rows"]
    ):
        report.problems.append(f"{CASE}: no row of the audit chain makes the case {case['status']}")


def _check_journal(read: _Read, report: Verification) -> None:
    """The journal is whole up to its end, and its last entry takes this case's decision."""
    journal, case = read.journal, read.case
    entries, position = journal["entries"], journal["decision_position"]
    report.journal_entries, report.decision_position = len(entries), position
    if journal["run"] != case["run"]:
        report.problems.append(
            f"{JOURNAL} is run {journal['run']}'s, the case's run is {case['run']}"
        )
    if [entry["position"] for entry in entries] != list(range(len(entries))):
        report.problems.append(f"{JOURNAL}: entries are missing or out of order")
        return
    if position is None:
        if case["status"] != "superseded":
            report.problems.append(f"{JOURNAL} does not lead to the decision: no entry takes it")
        return
    last = entries[-1] if entries else {}
    taken = decision_of(last.get("name"), last.get("result"))
    deciders = sorted(
        vote["reviewer"] for vote in case["decisions"] if vote["outcome"] == case["outcome"]
    )
    if (
        last.get("position") != position
        or last.get("kind") != "step"
        or last.get("name") not in DECISION_STEPS
    ):
        report.problems.append(
            f"{JOURNAL} does not end at the step that takes the decision (position {position})"
        )
    elif (taken.get("request_id"), taken.get("outcome"), sorted(taken.get("by") or [])) != (
        case["id"],
        case["outcome"],
        deciders,
    ):
        report.problems.append(
            f"{JOURNAL}: the decision the run took ({taken.get('outcome')} by {taken.get('by')}) "
            f"is not the case's ({case['outcome']} by {deciders})"
        )
    elif last["name"] == "read_decision":
        _check_signal(entries, case, report)


def _check_signal(entries: list, case, report: Verification) -> None:
    """read_decision runs once the case's signal woke the run: the signal before it is this
    case's."""
    received = [entry.get("result") or {} for entry in entries if entry["kind"] == "signal"]
    signal = next(
        (result for result in reversed(received) if result.get("name") == case["signal"]), {}
    )
    payload = signal.get("payload") or {}
    if (payload.get("request_id"), payload.get("outcome")) != (case["id"], case["outcome"]):
        report.problems.append(
            f"{JOURNAL}: no {case['signal']} signal of case #{case['id']} "
            f"({case['outcome']}) comes before the decision"
        )


# Each check, and the parsed members it reads (skipped when one is missing: that is reported).
CHECKS = (
    (_check_manifest, ("manifest",)),
    (_check_about, ("about", "case", "audit")),
    (_check_files, ("about",)),
    (_check_audit, ("audit", "case")),
    (_check_decisions, ("case", "audit")),
    (_check_journal, ("journal", "case")),
)
