"""Helpers shared by the ``manage.py durable`` subcommands: JSON arguments, audit, tables."""

import json

from django.core.management.base import CommandError

from durable import validation
from durable.errors import DurableError
from durable.surfaces.audit import command_audit as audit  # noqa: F401  (the subcommands' name for it)

USAGE_ERROR = 2


def parse_json(text: str, *, what: str):
    """Parse a JSON option, or stop with exit code 2 and a message naming the option."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise CommandError(f"{what} is not valid JSON: {error}", returncode=USAGE_ERROR) from None
    try:
        return validation.check_json_value(value, what=what)
    except DurableError as error:
        raise CommandError(str(error), returncode=USAGE_ERROR) from None


def loose_json(text: str):
    """A positional argument: JSON when it parses (``4``, ``true``, ``{"a": 1}``), else the text."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def table(rows: list[list], headers: list[str]) -> str:
    cells = [headers, *[["" if value is None else str(value) for value in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join(
        "  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip() for row in cells
    )


def short(value, limit: int = 60) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def when(moment) -> str:
    return moment.isoformat(timespec="seconds") if moment else ""
