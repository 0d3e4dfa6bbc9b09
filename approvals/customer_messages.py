"""What a decision tells the customer, apart from the reviewer's reason.

A decision carries two texts: the reason (the compliance rationale: internal, audited, never
sent) and, optionally, the message to the customer, which the process sends with the
outcome. A process registers canned texts per outcome (``register_customer_messages``); the
reviewer picks one in their own language and may add a free line. The customer reads it in
the customers' language (``APPROVALS_CUSTOMER_LANGUAGE``, Brazilian Portuguese), and the
decision stores exactly the text sent. Standard reasons (the internal rationale) are offered
the same way, in the reviewer's language (``register_reasons``).
"""

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from approvals.errors import InvalidOutcome

MESSAGE_MAX = 1000


class StandardTexts:
    """A process's standard texts per outcome: {workflow name: {outcome: {key: gettext_lazy}}}."""

    def __init__(self, refusal: str):
        self._texts: dict[str, dict[str, dict[str, object]]] = {}
        self.refusal = refusal  # said when a key is not offered with the outcome

    def register(self, workflow_name: str, texts: dict[str, dict[str, object]]) -> None:
        for outcome, choices in texts.items():
            self._texts.setdefault(workflow_name, {}).setdefault(outcome, {}).update(choices)

    def choices(self, workflow_name: str) -> dict[str, list[tuple[str, str]]]:
        """{outcome: [(key, text in the reader's language)]} for the decision form."""
        return {
            outcome: [(key, str(text)) for key, text in choices.items()]
            for outcome, choices in self._texts.get(workflow_name, {}).items()
        }

    def text(self, workflow_name: str, outcome: str, key: str):
        text = self._texts.get(workflow_name, {}).get(outcome, {}).get(key)
        if text is None:
            raise InvalidOutcome(_(self.refusal) % {"key": key, "outcome": outcome})
        return text


MESSAGES = StandardTexts(
    gettext_noop(
        "The message %(key)s is not one this process sends when the outcome is %(outcome)s."
    )
)
# The reviewer's reason (internal): standard rationales a team agrees on.
REASONS = StandardTexts(
    gettext_noop(
        "The reason %(key)s is not one this process offers when the outcome is %(outcome)s."
    )
)
register_customer_messages, customer_message_choices = MESSAGES.register, MESSAGES.choices
register_reasons, reason_choices = REASONS.register, REASONS.choices


def customer_language() -> str:
    return getattr(settings, "APPROVALS_CUSTOMER_LANGUAGE", "pt-br")


def _joined(first: str, free: str, separator: str) -> str:
    return separator.join(part for part in (first, (free or "").strip()) if part)


def customer_message_compose(
    workflow_name: str, outcome: str, key: str = "", free: str = ""
) -> str:
    """The message as the customer reads it: the standard text ``key`` (for ``outcome``) in the
    customers' language, then the reviewer's free line. InvalidOutcome for a key the process
    does not offer with this outcome, or a message over MESSAGE_MAX."""
    standard = ""
    if key:
        with translation.override(customer_language()):
            standard = str(MESSAGES.text(workflow_name, outcome, key))
    message = _joined(standard, free, " ")
    if len(message) > MESSAGE_MAX:
        raise InvalidOutcome(
            _("The message to the customer is longer than %(max)s characters.")
            % {"max": MESSAGE_MAX}
        )
    return message


def reason_compose(workflow_name: str, outcome: str, key: str = "", free: str = "") -> str:
    """The reason as recorded: the standard reason ``key`` (in the reviewer's language, as they
    chose it), then what they wrote. InvalidOutcome for a key not offered with ``outcome``."""
    return _joined(str(REASONS.text(workflow_name, outcome, key)) if key else "", free, " — ")
