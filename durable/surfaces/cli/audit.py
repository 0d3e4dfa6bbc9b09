"""``durable audit verify``: walk every audit chain (runs, approval cases) and name the first broken link."""
from durable import chain

help = "Check the audit trails: every row's hash, every link to the row before, the table guards."


def add_arguments(parser):
    actions = parser.add_subparsers(dest="audit_action", metavar="ACTION")
    actions.required = True
    actions.add_parser("verify", help="walk the hash chains; exit 1 at the first broken link")


def handle(options, out) -> int:
    healthy = True
    for model in chain.chained_models():
        report = chain.verify(model)
        out.write(f"{report.table}: {report.rows} row(s) in {report.chains} chain(s); "
                  f"append-only trigger {report.guard}")
        if report.broken:
            out.write(f"BROKEN {report.broken}")
            return 1
        out.write(f"  heads digest {report.head_digest} (record it elsewhere to notice rows cut from the end)")
        if report.guard in ("missing", "disabled"):
            out.write(f"UNGUARDED {report.table}: the append-only trigger is {report.guard}")
            healthy = False
    return 0 if healthy else 1
