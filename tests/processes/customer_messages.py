"""The customer messages docs/processes.md lists ("What customers read, as sent"), as patterns."""

import re
from functools import cache
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "processes.md"
# Keys of the messages the processes send (the runs' and the intake's), not a test's own sends.
PROCESS_KEYS = (
    "onboarding:",
    "billing:",
    "status:",
    "legal-name:",
    "unreadable:",
    "confirm-withdrawal:",
    "option:",
    "document-kind:",
)


def documented(section: str) -> list[str]:
    text = DOCS.read_text(encoding="utf-8")
    block = text.split(f"<!-- {section} -->", 1)[1].split(f"<!-- /{section} -->", 1)[0]
    return re.findall(r"^- `(.+)`$", block, flags=re.MULTILINE)


def pattern(line: str) -> re.Pattern:
    parts = re.split(r"<[^>]+>", line)
    return re.compile(".+?".join(re.escape(part) for part in parts), flags=re.DOTALL)


@cache
def patterns(section: str) -> tuple[re.Pattern, ...]:
    return tuple(pattern(line) for line in documented(section))


def undocumented(body: str) -> list[str]:
    """What of ``body`` the list does not say: the whole message, or a problem it names."""
    if not any(p.fullmatch(body) for p in patterns("customer-messages")):
        return [body]
    if " Problemas: " not in body:
        return []
    problems = body.split(" Problemas: ", 1)[1].removesuffix(".").split("; ")
    return [
        problem
        for problem in problems
        if not any(p.fullmatch(problem) for p in patterns("customer-problems"))
    ]
