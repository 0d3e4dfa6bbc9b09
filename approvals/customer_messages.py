"""What a decision tells the customer, apart from the reviewer's reason.

A decision carries two texts: the reason (the compliance rationale: internal, audited, never
sent) and, optionally, the message to the customer, which the process sends with the
outcome. A process registers canned texts per outcome (``register_customer_messages``); the
reviewer picks one in their own language and may add a free line. The customer reads it in
the customers' language (``APPROVALS_CUSTOMER_LANGUAGE``, Brazilian Portuguese), and the
decision stores exactly the text sent.
"""
from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _

from approvals.errors import InvalidOutcome

# workflow name -> outcome -> key -> lazily translated text
_canned: dict[str, dict[str, dict[str, object]]] = {}
# The same, for the reviewer's reason (internal): standard rationales a team agrees on.
_reasons: dict[str, dict[str, dict[str, object]]] = {}
MESSAGE_MAX = 1000


def register_customer_messages(workflow_name: str, texts: dict[str, dict[str, object]]) -> None:
    """``texts``: {outcome: {key: gettext_lazy("...")}} offered to reviewers of this process's cases."""
    for outcome, choices in texts.items():
        _canned.setdefault(workflow_name, {}).setdefault(outcome, {}).update(choices)


def customer_message_choices(workflow_name: str) -> dict[str, list[tuple[str, str]]]:
    """{outcome: [(key, text in the reader's language)]} for the decision form."""
    return {outcome: [(key, str(text)) for key, text in choices.items()]
            for outcome, choices in _canned.get(workflow_name, {}).items()}


def customer_language() -> str:
    return getattr(settings, "APPROVALS_CUSTOMER_LANGUAGE", "pt-br")


def customer_message_compose(workflow_name: str, outcome: str, key: str = "", free: str = "") -> str:
    """The message as the customer reads it: the canned text ``key`` (for ``outcome``) in the
    customers' language, then the reviewer's free line. InvalidOutcome for a key the process
    does not offer with this outcome."""
    parts = []
    if key:
        text = _canned.get(workflow_name, {}).get(outcome, {}).get(key)
        if text is None:
            raise InvalidOutcome(_("The message %(key)s is not one this process sends when the outcome is %(outcome)s.")
                                 % {"key": key, "outcome": outcome})
        with translation.override(customer_language()):
            parts.append(str(text))
    if (free or "").strip():
        parts.append(free.strip())
    message = " ".join(parts)
    if len(message) > MESSAGE_MAX:
        raise InvalidOutcome(_("The message to the customer is longer than %(max)s characters.") % {"max": MESSAGE_MAX})
    return message


def register_reasons(workflow_name: str, texts: dict[str, dict[str, object]]) -> None:
    """Standard reasons (the internal rationale) per outcome: {outcome: {key: gettext_lazy(...)}}."""
    for outcome, choices in texts.items():
        _reasons.setdefault(workflow_name, {}).setdefault(outcome, {}).update(choices)


def reason_choices(workflow_name: str) -> dict[str, list[tuple[str, str]]]:
    return {outcome: [(key, str(text)) for key, text in choices.items()]
            for outcome, choices in _reasons.get(workflow_name, {}).items()}


def reason_compose(workflow_name: str, outcome: str, key: str = "", free: str = "") -> str:
    """The reason as recorded: the standard reason ``key`` (in the reviewer's language, as they
    chose it), then what they wrote. InvalidOutcome for a key not offered with ``outcome``."""
    parts = []
    if key:
        text = _reasons.get(workflow_name, {}).get(outcome, {}).get(key)
        if text is None:
            raise InvalidOutcome(_("The reason %(key)s is not one this process offers when the outcome is %(outcome)s.")
                                 % {"key": key, "outcome": outcome})
        parts.append(str(text))
    if (free or "").strip():
        parts.append(free.strip())
    return " — ".join(parts)
