"""The reply buttons and lists onboarding offers, and the ids their replies carry.

An option id is namespaced and names what it is about: ``withdraw:confirm``,
``withdraw:continue``, ``kind:<document pk>:<kind>``, ``missing:<kind>``. The router
(``services.option_route``) checks an id against the sender's company before acting on it.
"""

from processes.onboarding.models import REQUIRED_KINDS, DocumentKind
from processes.whatsapp.backends import ListRow, OptionList, ReplyButton

WITHDRAW_CONFIRM, WITHDRAW_CONTINUE = "withdraw:confirm", "withdraw:continue"
WITHDRAWAL_BUTTONS = (
    ReplyButton(WITHDRAW_CONFIRM, "Confirmar"),
    ReplyButton(WITHDRAW_CONTINUE, "Continuar"),
)
KIND_PREFIX, MISSING_PREFIX = "kind", "missing"
# A kind as a row's title (at most 24 characters).
KIND_TITLES_PT = {
    DocumentKind.ARTICLES: "Contrato social",
    DocumentKind.ADDRESS: "Comprovante de endereço",
    DocumentKind.SELFIE: "Selfie do responsável",
}
CHOOSE = "Escolher"


FILE_NAME_SHOWN_MAX = 100


def kind_question(document, *, file_name: str = "") -> tuple[str, OptionList]:
    """ "Which document is this?" for a file the classifier could not tell, one row per required
    kind; naming the file when its message gave a plain, printable name."""
    shown = file_name.strip() if isinstance(file_name, str) else ""
    body = (
        f"Qual documento é o arquivo {shown}?"
        if shown and shown.isprintable() and len(shown) <= FILE_NAME_SHOWN_MAX
        else "Qual documento é este?"
    )
    rows = tuple(
        ListRow(id=f"{KIND_PREFIX}:{document.pk}:{kind}", title=KIND_TITLES_PT[kind])
        for kind in REQUIRED_KINDS
    )
    return body, OptionList(button=CHOOSE, rows=rows)


def missing_list(missing: list[str]) -> OptionList | None:
    """The missing documents to choose from, when more than one is missing."""
    kinds = [kind for kind in missing if kind in KIND_TITLES_PT]
    if len(kinds) < 2:
        return None
    return OptionList(
        button="Ver documentos",
        rows=tuple(
            ListRow(id=f"{MISSING_PREFIX}:{kind}", title=KIND_TITLES_PT[kind]) for kind in kinds
        ),
    )


def kind_option(option_id: str) -> tuple[int, str] | None:
    """(document pk, kind) of a ``kind:<pk>:<kind>`` id naming a required kind; None otherwise."""
    prefix, _, rest = option_id.partition(":")
    pk, _, kind = rest.partition(":")
    if prefix != KIND_PREFIX or not pk.isdigit() or kind not in {str(k) for k in REQUIRED_KINDS}:
        return None
    return int(pk), kind


def missing_option(option_id: str) -> str | None:
    prefix, _, kind = option_id.partition(":")
    return kind if prefix == MISSING_PREFIX and kind in {str(k) for k in REQUIRED_KINDS} else None
