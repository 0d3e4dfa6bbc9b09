"""``durable archive --finished-before 90d [--export DIR] [--batch-size N] [--dry-run]``:
retention."""

from django.core.management.base import CommandError

from durable.features import archive
from durable.surfaces.cli._common import USAGE_ERROR, audit, table

help = (
    "Move finished runs (with journal, signals, audit) into the archive tables, or export them "
    "as gzip JSON Lines and delete them; in short batches, resumable after a kill."
)


def add_arguments(parser):
    parser.add_argument(
        "--finished-before",
        required=True,
        metavar="AGE",
        help="runs that finished longer ago than this, e.g. 90d, 12h, 2w",
    )
    parser.add_argument(
        "--export",
        metavar="DIR",
        help="write journal and signals to DIR/runs-*.jsonl.gz (fsynced) instead of "
        "the archive tables; the audit chain and a tombstone stay in the database",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=archive.DEFAULT_BATCH_SIZE,
        help=f"runs per transaction (default {archive.DEFAULT_BATCH_SIZE})",
    )
    parser.add_argument(
        "--max-batches", type=int, help="stop after this many batches (default: until done)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="count what would be archived, per workflow"
    )


def handle(options, out) -> int:
    try:
        before = archive.cutoff(options["finished_before"])
    except ValueError as error:
        raise CommandError(f"--finished-before: {error}", returncode=USAGE_ERROR) from None
    if options["max_batches"] is not None and options["max_batches"] < 1:
        raise CommandError("--max-batches must be at least 1", returncode=USAGE_ERROR)
    who = audit()
    try:
        report = archive.archive_pass(
            finished_before=before,
            actor=who["actor"],
            audit=who["audit"],
            export_dir=options["export"],
            batch_size=options["batch_size"],
            max_batches=options["max_batches"],
            dry_run=options["dry_run"],
            progress=lambda batch: out.write(
                f"batch {batch.token}: {batch.runs} run(s) in {batch.seconds:.3f} s"
                + (f" -> {batch.export_file}" if batch.export_file else "")
            ),
        )
    except archive.ArchiveError as error:
        raise CommandError(str(error), returncode=USAGE_ERROR) from None
    statuses = "/".join(archive.final_statuses())
    if options["dry_run"]:
        if report.counts:
            out.write(
                table(
                    [[name, count] for name, count in report.counts.items()], ["workflow", "runs"]
                )
            )
        out.write(
            f"dry run: {report.runs} {statuses} run(s) finished before "
            f"{before.isoformat(timespec='seconds')} would be archived"
        )
        return 0
    out.write(
        f"archived {report.runs} {statuses} run(s) finished before "
        f"{before.isoformat(timespec='seconds')} in {report.batches} batch(es)"
    )
    return 0
