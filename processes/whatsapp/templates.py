"""The WhatsApp templates the processes send outside the 24-hour window: one per purpose,
configured in ``WHATSAPP_TEMPLATES`` and checked at startup.

Only approved templates may start a conversation; each purpose names the template, its
language and the parameters it takes, from what the sending step provides.
"""

from dataclasses import dataclass

from processes import conf
from processes.whatsapp.models import MessagePurpose

GENERIC = MessagePurpose.GENERIC.value
# Every purpose a process sends for (the choices of ``OutboundMessage.purpose``), and the
# parameters its sender provides (``body``, the message's whole text, always is). A
# template may take any of them, in its own order.
PURPOSES = {
    purpose.value: parameters
    for purpose, parameters in {
        MessagePurpose.GENERIC: ("body",),
        MessagePurpose.GREETING: ("body",),
        MessagePurpose.DOCUMENTS_REQUEST: ("body", "missing"),
        MessagePurpose.DOCUMENT_REMINDER: ("body",),
        MessagePurpose.DECISION_APPROVED: ("body", "account"),
        MessagePurpose.DECISION_REJECTED: ("body",),
        MessagePurpose.DECISION_MORE_DOCUMENTS: ("body", "request"),
        MessagePurpose.BILLING_REMINDER: ("body", "number", "invoice", "amount", "due_date"),
    }.items()
}
# The template statuses Meta reports that stop a template from being sent.
BLOCKING_STATUSES = {"REJECTED", "PAUSED", "DISABLED"}


class TemplateMissing(LookupError):
    """A purpose has no template configured (the system check says so at startup)."""


class TemplateParameterMissing(ValueError):
    """A template takes a parameter its sender did not give."""


@dataclass(frozen=True)
class Template:
    purpose: str
    name: str
    language: str
    parameters: tuple[str, ...]
    named: bool = False  # Meta's named parameters ({{invoice}}) rather than positional ({{1}})

    def values(self, given: dict) -> list[tuple[str, str]]:
        """(parameter, text) in the template's order; TemplateParameterMissing for a gap."""
        missing = [name for name in self.parameters if given.get(name) in (None, "")]
        if missing:
            raise TemplateParameterMissing(
                f"template {self.name!r} ({self.purpose}) needs {', '.join(missing)}"
            )
        return [(name, template_text(given[name])) for name in self.parameters]


# Meta refuses a template's text parameter with a line break, a tab or more than four spaces
# in a row (error 132018), and caps its length: a reviewer's message has all of these.
PARAMETER_MAX = 1000


def template_text(value) -> str:
    """A template parameter as Meta takes it: whitespace runs collapsed to one space, cut to
    PARAMETER_MAX characters (with an ellipsis)."""
    text = " ".join(str(value).split())
    return text if len(text) <= PARAMETER_MAX else text[: PARAMETER_MAX - 1] + "…"


def language_code(language: str) -> str:
    """Meta's code for a language: ``pt_BR`` (its webhooks write ``pt-BR`` too)."""
    return str(language or "").strip().replace("-", "_")


def configured() -> dict:
    return conf.setting("WHATSAPP_TEMPLATES", {}) or {}


def default_language() -> str:
    return language_code(conf.setting("WHATSAPP_TEMPLATE_LANGUAGE", "pt_BR")) or "pt_BR"


def template_for(purpose: str | None) -> Template:
    """The template a message of this purpose goes out as; no purpose is the generic one.
    Its language is the template's own, else WHATSAPP_TEMPLATE_LANGUAGE (our customers'
    language: no company records another)."""
    purpose = purpose or GENERIC
    entry = configured().get(purpose)
    if not isinstance(entry, dict) or not entry.get("name"):
        raise TemplateMissing(f"no template for {purpose!r} in WHATSAPP_TEMPLATES")
    return Template(
        purpose=purpose,
        name=str(entry["name"]),
        language=language_code(entry.get("language") or default_language()),
        parameters=tuple(entry.get("parameters", ("body",))),
        named=entry.get("parameter_format") == "named",
    )


def configured_pairs() -> set[tuple[str, str]]:
    """(name, language) of every configured template: what health and the alerts watch."""
    pairs = set()
    for purpose in configured():
        try:
            template = template_for(purpose)
        except TemplateMissing:
            continue
        pairs.add((template.name, template.language))
    return pairs
