"""The audit chains' heads, exported outside the database on a schedule, and the chains
checked against them: a chain cut at its end, or a table emptied, still verifies on its
own; against the heads exported earlier it does not."""

import json
import os
from collections.abc import Iterator
from pathlib import Path

from django.apps import apps
from django.utils.module_loading import import_string

from durable import chain, clock, conf, sql

FORMAT = 1


class HeadsFileError(ValueError):
    """The exported heads could not be read (a line that is not one of our records)."""


class HeadsSink:
    """Where exported heads go: one record per export, appended, never rewritten. A sink
    that is not a file keeps the same records, so that a copy of them, one JSON line each,
    can be given to ``durable audit verify --against``."""

    def append(self, record: dict) -> None:
        raise NotImplementedError


class FileSink(HeadsSink):
    """One JSON line per export, appended to DURABLE_AUDIT_HEADS_FILE and synced to disk.
    The file is only as safe as where it lives: make it append-only (``chattr +a``) or
    ship it off the database host."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path or conf.audit_heads_file())

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        line = (json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n").encode()
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            with os.fdopen(descriptor, "ab", closefd=False) as handle:
                handle.write(line)
                handle.flush()
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def heads_record() -> dict:
    """Every chain's last link, by table, as of now."""
    tables = {}
    for model in chain.chained_models():
        column = model._meta.get_field(model.chain_parent).column
        tables[model._meta.db_table] = {
            parent: [seq, row_hash] for parent, seq, row_hash in sql.chain_heads(model, column)
        }
    return {"format": FORMAT, "at": clock.now().isoformat(), "tables": tables}


def export_heads(*, sink: HeadsSink | None = None) -> dict:
    """Append the current heads to the sink (DURABLE_AUDIT_HEADS_SINK unless one is given)."""
    record = heads_record()
    (sink or import_string(conf.audit_heads_sink())()).append(record)
    return record


def read_heads(path: str | Path) -> dict[str, dict[str, chain.Head]]:
    """The furthest exported head of every chain, by table. That row, with the links
    before it, vouches for every earlier head; two exports naming one position with two
    hashes keep the earlier, so a rewrite exported since is still found."""
    expected: dict[str, dict[str, chain.Head]] = {}
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                at, tables = record["at"], record["tables"]
                for table, heads in tables.items():
                    for parent, (seq, row_hash) in heads.items():
                        _keep_furthest(
                            expected.setdefault(table, {}),
                            parent,
                            chain.Head(int(seq), str(row_hash), str(at), table),
                        )
            except (ValueError, KeyError, TypeError, AttributeError) as error:
                raise HeadsFileError(
                    f"{path}, line {number}: not an exported heads record ({error})"
                ) from None
    return expected


def _keep_furthest(heads: dict[str, chain.Head], parent: str, head: chain.Head) -> None:
    known = heads.get(parent)
    if known is None or head.seq > known.seq:
        heads[parent] = head


def verify_chains(
    expected: dict[str, dict[str, chain.Head]] | None = None,
) -> Iterator[chain.ChainReport]:
    """Verify every audit table, against the exported heads if given; stop after the first
    broken one. A chain the heads name but its table no longer holds may have moved whole
    to the table's archive (``archived_in``): it is looked for there, and is broken if absent."""
    expected = {table: dict(heads) for table, heads in (expected or {}).items()}
    for model in sorted(chain.chained_models(), key=lambda model: not model.archived_in):
        report = chain.verify(model, expected=expected.get(model._meta.db_table, {}))
        if report.broken is None and report.unmatched:
            if model.archived_in:
                archive = expected.setdefault(apps.get_model(model.archived_in)._meta.db_table, {})
                for parent, head in report.unmatched.items():
                    _keep_furthest(archive, parent, head)
            else:
                parent, head = next(iter(report.unmatched.items()))
                report.broken = chain.Broken(
                    head.table,
                    parent,
                    head.seq,
                    None,
                    f"the chain exported at {head.at} is gone "
                    f"(its rows deleted, or the table emptied)",
                )
        yield report
        if report.broken:
            return
