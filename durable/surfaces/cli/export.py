"""``durable export <run id> [-o file]``: write a run's history (journal, input, signals) as
JSON."""

import json
from pathlib import Path

from durable.features import history

help = "Write a run's history (workflow, version, input, journal, signals) as JSON."


def add_arguments(parser):
    parser.add_argument("run_id", help="the run's id, e.g. onboarding:c-42")
    parser.add_argument("-o", "--output", help="write to this file instead of standard output")


def handle(options, out) -> int:
    document = history.history_export(options["run_id"])
    text = json.dumps(document, indent=2, ensure_ascii=False) + "\n"
    if options.get("output"):
        path = Path(options["output"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out.write(f"wrote {path} ({len(document['journal'])} journal entries)")
    else:
        out.write(text, ending="")
    return 0
