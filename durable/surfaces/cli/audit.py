"""``durable audit verify [--against HEADS]``: walk every audit chain (runs, approval cases) and
name the first broken link; ``durable audit export-heads``: append the chains' heads to the sink."""

from durable.features import audit_heads

help = (
    "Check the audit trails: every row's hash and seal, "
    "every link, the table guards, the exported heads."
)


def add_arguments(parser):
    actions = parser.add_subparsers(dest="audit_action", metavar="ACTION")
    actions.required = True
    verify = actions.add_parser(
        "verify", help="walk the hash chains; exit 1 at the first broken link"
    )
    verify.add_argument(
        "--against",
        metavar="HEADS",
        help="a file of exported heads (DURABLE_AUDIT_HEADS_FILE): every chain must still "
        "reach its exported head, with the same hash",
    )
    actions.add_parser(
        "export-heads",
        help="append every chain's head to DURABLE_AUDIT_HEADS_SINK now "
        "(beat does it every DURABLE_AUDIT_HEADS_INTERVAL_SECONDS)",
    )


def handle(options, out) -> int:
    if options["audit_action"] == "export-heads":
        record = audit_heads.export_heads()
        chains = sum(len(heads) for heads in record["tables"].values())
        out.write(f"exported the heads of {chains} chain(s) at {record['at']}")
        return 0
    expected = None
    if options.get("against"):
        try:
            expected = audit_heads.read_heads(options["against"])
        except (OSError, audit_heads.HeadsFileError) as error:
            out.write(f"cannot read the exported heads: {error}")
            return 2
        out.write(
            f"against the heads of {sum(len(heads) for heads in expected.values())} chain(s) "
            f"in {options['against']}"
        )
    healthy = True
    for report in audit_heads.verify_chains(expected):
        out.write(
            f"{report.table}: {report.rows} row(s) in {report.chains} chain(s); "
            f"append-only trigger {report.guard}"
        )
        if report.broken:
            out.write(f"BROKEN {report.broken}")
            return 1
        out.write(
            f"  heads digest {report.head_digest} (record "
            "it elsewhere to notice rows cut from the end)"
        )
        if report.guard in ("missing", "disabled"):
            out.write(f"UNGUARDED {report.table}: the append-only trigger is {report.guard}")
            healthy = False
    return 0 if healthy else 1
