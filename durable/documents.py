"""A run's history as a JSON document (``durable-history/1``): the one format that
``durable export`` and the archive write and that replay reads.

Kept apart from ``durable.features.history`` (the replay) so that the archive, which writes these
documents, and the replay, which reads archived ones, need not import each other.
"""

import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path

FORMAT = "durable-history/1"
# An export file while its pass writes it; renamed without this once the pass commits.
PARTIAL = ".partial"


@dataclass
class RecordedRun:
    id: str
    workflow_name: str
    workflow_version: int
    input: dict
    status: str = ""
    result: object = None
    error: dict | None = None


@dataclass
class RecordedEntry:
    position: int
    kind: str
    name: str
    status: str
    result: object = None
    error: dict | None = None
    attempt: int = 0
    idempotency_key: str = ""
    wake_at: str | None = None


@dataclass
class History:
    run: RecordedRun
    journal: dict[int, RecordedEntry]
    signals: list[dict] = field(default_factory=list)
    source: str = ""


def iso(value) -> str | None:
    return value.isoformat() if value is not None else None


def entry_json(entry) -> dict:
    """A journal entry (live or archived) as the document holds it."""
    return {
        "position": entry.position,
        "kind": entry.kind,
        "name": entry.name,
        "status": entry.status,
        "result": entry.result,
        "error": entry.error,
        "attempt": entry.attempt,
        "idempotency_key": entry.idempotency_key,
        "wake_at": iso(entry.wake_at),
        "started_at": iso(entry.started_at),
        "created_at": iso(entry.created_at),
    }


def history_parse(document: dict, *, source: str = "") -> History:
    """Build a History from an exported document; ValueError names what is missing."""
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(f"not a {FORMAT} document")
    try:
        run = document["run"]
        recorded = RecordedRun(
            id=run["id"],
            workflow_name=run["workflow_name"],
            workflow_version=int(run["workflow_version"]),
            input=run["input"],
            status=run.get("status", ""),
            result=run.get("result"),
            error=run.get("error"),
        )
        journal = {}
        for item in document["journal"]:
            entry = RecordedEntry(
                position=int(item["position"]),
                kind=item["kind"],
                name=item["name"],
                status=item["status"],
                result=item.get("result"),
                error=item.get("error"),
                attempt=int(item.get("attempt", 0)),
                idempotency_key=item.get("idempotency_key", ""),
                wake_at=item.get("wake_at"),
            )
            journal[entry.position] = entry
    except (KeyError, TypeError) as exc:
        raise ValueError(f"malformed history: missing or invalid {exc}") from None
    return History(
        run=recorded, journal=journal, signals=document.get("signals", []), source=source
    )


def export_file_documents(path: str | Path):
    """Every document of a ``durable archive --export`` file (gzip JSON Lines), in order."""
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)
