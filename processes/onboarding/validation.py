"""Document checks behind one interface: rules by default, a language model optionally.

Checkers are called from the ``validate_documents`` step only, so whatever a model
answers is journaled and a replay never asks it again.
"""

import json
import logging
import unicodedata
import urllib.error
import urllib.request
from dataclasses import dataclass, field

from processes import conf
from processes.onboarding.findings import finding
from processes.onboarding.models import REQUIRED_KINDS, DocumentKind

log = logging.getLogger(__name__)

ALLOWED_MIME_TYPES = {
    DocumentKind.ARTICLES: {"application/pdf", "image/jpeg", "image/png"},
    DocumentKind.ADDRESS: {"application/pdf", "image/jpeg", "image/png"},
    DocumentKind.SELFIE: {"image/jpeg", "image/png"},
}
KEYWORDS = {
    DocumentKind.ARTICLES: ("contrato social", "contrato", "estatuto", "articles", "social"),
    DocumentKind.ADDRESS: ("comprovante", "endereco", "address", "residencia", "conta de luz"),
    DocumentKind.SELFIE: ("selfie", "foto", "rosto"),
}


class CheckerError(Exception):
    """The checker could not give an answer (the step retries, then falls back to rules)."""


@dataclass
class DocumentFacts:
    """What a checker knows of a document. ``fetch_status`` is the document's
    (``DocumentFetch``); a checker counts only a ``stored`` one."""

    kind: str
    mime_type: str
    file_name: str = ""
    caption: str = ""
    size: int | None = None
    fetch_status: str = "stored"


# A document that does not count, by its fetch status: the problem's code (findings.py).
NOT_COUNTED = {
    "pending": "document_pending",
    "failed": "document_failed",
    "refused": "document_refused",
}


@dataclass
class ValidationResult:
    """``problems`` in English, as cases and the API carry them; ``notes`` the same problems
    coded (``finding`` shape plus the document's ``kind`` and whether a valid document of
    that kind has arrived since: ``solved``), so the customer hears them in Portuguese and
    is never asked again about one already solved. Results journaled before ``notes``
    existed have none: their problems are said as recorded."""

    ok: bool
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    checker: str = "rules"
    notes: list[dict] = field(default_factory=list)


def _plain(text: str) -> str:
    text = unicodedata.normalize("NFKD", text or "").encode("ascii", "ignore").decode()
    return text.lower()


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):g} MB" if n >= 1024 * 1024 else f"{n} bytes"


def guess_kind(*, message_type: str, file_name: str = "", caption: str = "") -> str:
    """Which document this is, from the caption or file name; an image defaults to the selfie."""
    words = _plain(f"{caption} {file_name}")
    for kind, keywords in KEYWORDS.items():
        if any(keyword in words for keyword in keywords):
            return kind
    return DocumentKind.SELFIE if message_type == "image" else DocumentKind.UNKNOWN


class RulesChecker:
    """Every required kind present, in an allowed format, within the size limit."""

    name = "rules"

    def __init__(self, *, max_bytes: int):
        self.max_bytes = max_bytes

    def check(self, documents: list[DocumentFacts]) -> ValidationResult:
        notes, valid_kinds, unfetched = [], set(), False
        for doc in documents:

            def note(code, doc=doc, **params):
                label = doc.file_name or doc.kind
                notes.append(
                    {**finding("problem", code, label=label, **params), "kind": str(doc.kind)}
                )

            if doc.fetch_status == "too_large" or (
                doc.size is not None and doc.size > self.max_bytes
            ):
                note("document_too_large", limit=_size(self.max_bytes))
            elif doc.fetch_status != "stored":
                note(NOT_COUNTED.get(doc.fetch_status, "document_pending"))
                unfetched = unfetched or doc.fetch_status == "pending"
            elif doc.kind not in ALLOWED_MIME_TYPES:
                note("document_kind_unknown")
            elif doc.mime_type not in ALLOWED_MIME_TYPES[doc.kind]:
                note("document_type_refused", mime_type=doc.mime_type or "unknown format")
            else:
                valid_kinds.add(doc.kind)
        for item in notes:
            item["solved"] = item["kind"] in valid_kinds
        missing = [str(kind) for kind in REQUIRED_KINDS if kind not in valid_kinds]
        # A document still being fetched may be the one that decides: no verdict without it.
        return ValidationResult(
            ok=not missing and not unfetched,
            missing=missing,
            problems=[item["result"] for item in notes],
            checker=self.name,
            notes=notes,
        )


class LanguageModelChecker:
    """Rules first, then a model over an OpenAI-compatible chat API may find more problems.

    The model can only add findings: it never accepts what the rules reject.
    """

    name = "llm"
    PROMPT = (
        "You check documents sent to open a Brazilian business (PJ) bank account. Required: "
        "articles_of_association, proof_of_address, selfie. Given the documents as JSON, answer "
        'only with JSON: {"ok": bool, "missing": [kinds], "problems": [short sentences]}.'
    )

    def __init__(
        self, *, base_url: str, api_key: str, model: str, rules: RulesChecker, timeout: float = 30
    ):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.api_key, self.model, self.rules, self.timeout = api_key, model, rules, timeout

    def check(self, documents: list[DocumentFacts]) -> ValidationResult:
        by_rules = self.rules.check(documents)
        answer = self._ask([doc.__dict__ for doc in documents])
        missing = list(
            dict.fromkeys(
                [
                    *by_rules.missing,
                    *[m for m in answer["missing"] if m in {str(k) for k in REQUIRED_KINDS}],
                ]
            )
        )
        problems = list(dict.fromkeys([*by_rules.problems, *answer["problems"]]))
        ok = by_rules.ok and answer["ok"] and not missing
        model_notes = [
            {"check": "problem", "result": problem, "kind": "", "solved": False}
            for problem in problems
            if problem not in by_rules.problems
        ]
        return ValidationResult(
            ok=ok,
            missing=missing,
            problems=problems,
            checker=self.name,
            notes=by_rules.notes + model_notes,
        )

    def _ask(self, documents: list[dict]) -> dict:
        body = {
            "model": self.model,
            "temperature": 0,
            "response_format": {"type": "json_object"},
            "messages": [
                {"role": "system", "content": self.PROMPT},
                {"role": "user", "content": json.dumps(documents, ensure_ascii=False)},
            ],
        }
        request = urllib.request.Request(
            self.url,
            data=json.dumps(body).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.api_key}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                reply = json.loads(response.read())
            content = json.loads(reply["choices"][0]["message"]["content"])
        except urllib.error.HTTPError as exc:
            raise CheckerError(f"the model API answered {exc.code}") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            raise CheckerError(f"cannot reach the model API: {exc}") from None
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise CheckerError(f"the model's answer is not the expected JSON: {exc}") from None
        if not isinstance(content, dict) or not isinstance(content.get("ok"), bool):
            raise CheckerError(f"the model's answer has no boolean 'ok': {content!r:.200}")
        return {
            "ok": content["ok"],
            "missing": [str(m) for m in content.get("missing") or [] if isinstance(m, str)],
            "problems": [str(p)[:300] for p in content.get("problems") or [] if isinstance(p, str)],
        }


def rules_checker() -> RulesChecker:
    return RulesChecker(max_bytes=conf.setting("DOCUMENT_MAX_BYTES", 10 * 1024 * 1024))


def checker_from_settings():
    """DOCUMENT_CHECKER = ``rules`` (default) or ``llm`` (needs LLM_API_BASE_URL and LLM_MODEL)."""
    if conf.setting("DOCUMENT_CHECKER", "rules") == "llm":
        return LanguageModelChecker(
            base_url=conf.secret("LLM_API_BASE_URL"),
            api_key=conf.setting("LLM_API_KEY", ""),
            model=conf.secret("LLM_MODEL"),
            rules=rules_checker(),
        )
    return rules_checker()
