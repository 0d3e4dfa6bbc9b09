"""``durable sizes``: bytes per finished run, per workflow and table, measured on PostgreSQL.

Each run's rows are measured with pg_column_size (the row as stored, TOAST compressed);
the table's share adds what the rows do not show (tuple headers, line pointers, indexes,
free space) in proportion: pg_total_relation_size(table) / sum of all its rows' sizes.
The share is only meaningful once the tables hold thousands of rows (an 8 kB page is the
smallest unit): scripts/measure_run_sizes.py seeds them.
"""

from django.db import connection

from durable.features import archive
from durable.surfaces.cli._common import table

help = "Bytes per finished run for each workflow (PostgreSQL): rows, indexes and all."

# (table, how its rows join to a run id, label)
TABLES = [
    ("durable_workflowrun", "t.id", "run"),
    ("durable_journalentry", "t.run_id", "journal"),
    ("durable_signal", "t.run_id", "signals"),
    ("durable_auditevent", "t.run_id", "audit"),
    ("approvals_approvalrequest", "t.run_id", "approval cases (kept)"),
    (
        "approvals_approvalaudit",
        "(SELECT r.run_id FROM approvals_approvalrequest r WHERE r.id = t.request_id)",
        "approval audit (kept)",
    ),
]


def add_arguments(parser):
    parser.add_argument("--workflow", action="append", help="only this workflow (repeatable)")


def measure(workflows: list[str] | None = None) -> list[dict]:
    finals = archive.final_statuses()
    rows = []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT workflow_name, count(*) FROM durable_workflowrun WHERE status = ANY(%s) "
            "GROUP BY workflow_name ORDER BY workflow_name",
            [finals],
        )
        counts = dict(cursor.fetchall())
        for workflow in workflows or list(counts):
            runs = counts.get(workflow, 0)
            if not runs:
                continue
            for name, run_of, label in TABLES:
                cursor.execute(
                    f"SELECT pg_total_relation_size(%s), coalesce(sum(pg_column_size(t.*)), 0) "
                    f"FROM {name} t",
                    [name],
                )
                total_bytes, all_row_bytes = cursor.fetchone()
                cursor.execute(
                    f"SELECT count(*), coalesce(sum(pg_column_size(t.*)), 0) FROM {name} t "
                    f"WHERE {run_of} IN (SELECT id FROM durable_workflowrun "
                    f"WHERE workflow_name = %s AND status = ANY(%s))",
                    [workflow, finals],
                )
                count, row_bytes = cursor.fetchone()
                share = row_bytes * total_bytes / all_row_bytes if all_row_bytes else 0
                rows.append(
                    {
                        "workflow": workflow,
                        "runs": runs,
                        "table": label,
                        "rows_per_run": count / runs,
                        "row_bytes_per_run": row_bytes / runs,
                        "bytes_per_run": share / runs,
                    }
                )
    return rows


def handle(options, out) -> int:
    if connection.vendor != "postgresql":
        out.write("durable sizes measures PostgreSQL's storage; DATABASE_URL is not PostgreSQL")
        return 2
    measured = measure(options.get("workflow"))
    if not measured:
        out.write("no finished runs to measure")
        return 0
    out.write(
        table(
            [
                [
                    m["workflow"],
                    m["runs"],
                    m["table"],
                    f"{m['rows_per_run']:.1f}",
                    f"{m['row_bytes_per_run']:.0f}",
                    f"{m['bytes_per_run']:.0f}",
                ]
                for m in measured
            ],
            ["workflow", "finished runs", "table", "rows/run", "row bytes/run", "with indexes/run"],
        )
    )
    out.write("")
    totals: dict[str, list[float]] = {}
    for m in measured:
        moved = "kept" not in m["table"]
        entry = totals.setdefault(m["workflow"], [0.0, 0.0, 0.0])
        entry[0] += m["row_bytes_per_run"]
        entry[1] += m["bytes_per_run"] if moved else 0
        entry[2] += m["bytes_per_run"]
    out.write(
        table(
            [
                [name, f"{row:.0f}", f"{hot:.0f}", f"{everything:.0f}"]
                for name, (row, hot, everything) in totals.items()
            ],
            ["workflow", "row bytes/run", "engine tables/run", "with approvals/run"],
        )
    )
    return 0
