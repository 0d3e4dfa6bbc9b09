"""``python manage.py approvals evidence export CASE_ID [-o FILE]`` and ``... evidence verify
FILE``: an operator's copy of a case's evidence pack (audited like a download), and its check."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from approvals.errors import ApprovalError
from approvals.evidence.pack import database_problems
from approvals.evidence.verify import verify_pack
from approvals.services import approval_evidence_take
from durable.surfaces.audit import command_audit


class Command(BaseCommand):
    help = "Evidence packs of decided compliance cases: export one, verify one."

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="subcommand", metavar="SUBCOMMAND")
        commands.required = True
        evidence = commands.add_parser("evidence", help="export or verify a case's evidence pack")
        actions = evidence.add_subparsers(dest="action", metavar="ACTION")
        actions.required = True
        verify = actions.add_parser(
            "verify",
            help="check a pack offline (hashes, the audit chain's links, the journal up to the "
            "decision); exits 1 on any problem",
        )
        verify.add_argument("file", help="the pack (.zip)")
        verify.add_argument(
            "--against-database",
            action="store_true",
            help="also compare the pack with the case's audit trail in this database: its rows, "
            "and the recorded download of this very manifest",
        )
        export = actions.add_parser(
            "export", help="write a decided case's pack to a file (audited)"
        )
        export.add_argument("case_id", type=int)
        export.add_argument(
            "-o", "--output", help="where to write it (default: case-<id>-evidence.zip here)"
        )

    def handle(self, *args, **options):
        if options["action"] == "export":
            self.export(options["case_id"], options["output"])
        else:
            self.verify(Path(options["file"]), against_database=options["against_database"])

    def export(self, case_id: int, output: str | None) -> None:
        who = command_audit()
        try:
            pack = approval_evidence_take(
                case_id, actor=who["actor"], via=f"cli@{who['audit']['host']}"
            )
        except ApprovalError as error:
            raise CommandError(str(error), returncode=1) from None
        path = Path(output or pack.filename)
        path.write_bytes(pack.content)
        self.stdout.write(
            f"wrote {path} ({len(pack.content)} bytes)\nmanifest sha256 {pack.manifest_sha256}\n"
            f"head {pack.head}"
        )

    def verify(self, path: Path, *, against_database: bool) -> None:
        try:
            content = path.read_bytes()
        except OSError as error:
            raise CommandError(f"cannot read {path}: {error}", returncode=2) from None
        report = verify_pack(content)
        problems = list(report.problems)
        if against_database and not problems:
            problems += database_problems(report)
        if problems:
            for problem in problems:
                self.stdout.write(f"problem: {problem}")
            raise CommandError(f"{path} does not verify: {len(problems)} problem(s)", returncode=1)
        where = "the audit trail of this database" if against_database else "the file alone"
        self.stdout.write(
            f"verified (from {where}): case #{report.case_id}, {report.files} files, "
            f"{len(report.audit_links)} audit rows, {report.journal_entries} journal entries"
            + (
                f" up to the decision at position {report.decision_position}"
                if report.decision_position is not None
                else " (the process ended before taking the decision)"
            )
            + f"\nhead {report.head}\nmanifest sha256 {report.manifest_sha256}"
        )
