"""What a page or a message says, checked for the language it should be in.

Two nets, because one misses what the other catches: the catalog's strings of the other
language (a translated text shown untranslated), and, for Portuguese, English words that
no Portuguese sentence uses (a text nobody marked for translation never reaches the
catalog, so only the second net sees it). Data people and processes wrote is marked
``translate="no"`` on the pages and left out by ``visible_text``; identifiers (file names,
workflow and step names, MIME types) are single tokens with ``._/:@-`` or digits, skipped.
"""

import re
from pathlib import Path

AXE = Path(__file__).resolve().parent / "assets" / "axe-4.14.1.min.js"

# Words of English UI text that are never Portuguese (a short word like "a", "no", "do" is both).
ENGLISH_ONLY = frozenset(
    [
        "the",
        "and",
        "with",
        "this",
        "that",
        "from",
        "which",
        "were",
        "has",
        "have",
        "will",
        "been",
        "not",
        "selected",
        "woken",
        "pending",
        "running",
        "waiting",
        "failed",
        "cancelled",
        "canceled",
        "completed",
        "show",
        "hide",
        "save",
        "delete",
        "yes",
        "your",
        "you",
        "are",
        "of",
        "to",
        "for",
        "by",
        "is",
        "it",
        "at",
        "or",
        "an",
        "all",
        "none",
        "when",
        "where",
        "who",
        "what",
        "should",
        "could",
        "would",
        "there",
        "their",
        "they",
        "than",
        "then",
        "into",
        "over",
        "after",
        "before",
        "please",
        "send",
        "sent",
        "received",
        "approved",
        "rejected",
        "step",
        "steps",
        "signal",
        "signals",
        "customer",
        "customers",
        "account",
        "accounts",
        "history",
        "month",
        "months",
        "days",
        "week",
        "weeks",
        "hours",
        "order",
        "list",
        "run",
        "runs",
        "workflow",
        "workflows",
        "open",
        "closed",
        "new",
        "next",
        "back",
        "review",
        "reviewer",
        "reviewers",
        "approve",
        "reject",
        "claim",
        "claimed",
        "release",
        "note",
        "notes",
        "problem",
        "problems",
        "document",
        "documents",
        "file",
        "files",
        "reason",
        "reasons",
        "name",
        "date",
        "time",
        "more",
        "only",
        "also",
        "here",
        "now",
        "today",
        "search",
        "filter",
        "apply",
        "submit",
        "cancel",
        "done",
        "found",
        "letter",
        "bank",
        "person",
        "owner",
        "case",
        "cases",
        "limit",
        "error",
    ]
)
PORTUGUESE_ONLY = frozenset(
    ["não", "você", "está", "também", "então", "são", "aguardando", "enviado", "recebido"]
)
_TOKEN = re.compile(r"[^\s,;()\[\]{}«»\"'“”‘’!?…·|•→←—–]+")
_IDENTIFIER = re.compile(r"[._/:@\-=#%+&*0-9<>]")


def visible_text(page) -> str:
    """The page's words, without what people and processes wrote (marked translate="no": a
    customer's caption, a validator's finding), which is data, not the UI's language."""
    return page.evaluate("""() => { const body = document.body.cloneNode(true);
        body.querySelectorAll('[translate=no], script, style, template').forEach(el => el.remove());
        return body.innerText; }""")


def strings_of_the_other_language(text: str, language: str) -> list[str]:
    """What of ``text`` belongs to the language not chosen: the catalog's entries whose two
    languages differ (long enough not to be a word both share), then the other language's
    own words (English words in Portuguese text, Portuguese words in English text)."""
    from django.utils import translation

    catalog = translation.trans_real.translation("pt-br")._catalog
    pairs = [
        (key, value)
        for key, value in catalog.items()
        if isinstance(key, str)
        and key
        and "\x04" not in key
        and "%" not in key
        and key != value
        and len(key) > 12
    ]
    english = language != "pt-br"
    found = [
        portuguese if english else source
        for source, portuguese in pairs
        if (portuguese if english else source) in text
    ]
    words = PORTUGUESE_ONLY if english else ENGLISH_ONLY
    for token in _TOKEN.findall(text):
        if not _IDENTIFIER.search(token) and (token if english else token.lower()) in words:
            found.append(token)
    return sorted(set(found))
