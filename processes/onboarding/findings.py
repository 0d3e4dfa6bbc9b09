"""What the onboarding checks found, as a case records it and as a reviewer reads it.

A finding is recorded once, in the journal and the case's summary, as
``{"check", "result", "code", "params"}``: ``check`` and ``result`` in English (what the API,
the evidence pack and older cases carry), ``code`` and ``params`` so the case page shows it in
the reviewer's language (``FINDING_TEXTS`` and ``CHECK_LABELS``, registered with the approvals
app by processes/onboarding/panels.py). The journal never holds a translated text: a replay
in another language must decide the same.
"""

from django.utils.translation import gettext
from django.utils.translation import gettext_noop as _

# code -> the sentence, with %(name)s for its params. The English msgid is also the recorded text.
FINDING_TEXTS = {
    "no_cnpj": _("no valid CNPJ given"),
    "same_cnpj": _("the CNPJ is already held by %(others)s"),
    "registry_error": _("the CNPJ registry could not be asked (%(error)s)"),
    "registry_not_found": _("the CNPJ registry has no such CNPJ"),
    "registry_inactive": _("the CNPJ registry lists the company as %(status)s, not %(active)s"),
    "registry_record": _("%(status)s — %(names)s"),
    "registry_record_unnamed": _("%(status)s — names not given"),
    "registry_opened": _("open since %(opened_on)s"),
    "registry_activity": _("main activity: %(activity)s"),
    "validator_problems": _("the validator reported problems"),
    "legal_name_mismatch": _(
        "the legal name the customer gave (%(given)s) does not match the registry's (%(registry)s)"
    ),
    "legal_name_unconfirmed": _("no registry record confirms the legal name (%(given)s)"),
    "legal_name_missing": _(
        "the legal name is not known: the registry does not give it and the customer "
        "was asked for it"
    ),
    # The validator's problems with one document (its file name, or its kind).
    "document_too_large": _("%(label)s: larger than %(limit)s"),
    "document_pending": _("%(label)s: not downloaded yet"),
    "document_failed": _("%(label)s: could not be downloaded, send it again"),
    "document_refused": _("%(label)s: the file is not a PDF, JPEG or PNG"),
    "document_kind_unknown": _("%(label)s: could not tell which document this is"),
    "document_type_refused": _("%(label)s: %(mime_type)s is not accepted"),
    "identity_changed": _(
        "WhatsApp reports that the customer's identity changed (a new phone, a reinstall, "
        "or someone else on the number)"
    ),
    "document_withdrawn": _(
        "the customer deleted %(label)s (%(kind)s) on WhatsApp: it no longer counts"
    ),
    "document_relabelled": _(
        "the customer changed the caption of %(label)s: now %(kind)s, was %(was)s"
    ),
    "documents_complete": _("all present"),
    "documents_missing": _("missing: %(kinds)s"),
}

CHECK_LABELS = {
    "risk": _("risk"),
    "CNPJ registry": _("CNPJ registry"),
    "legal name": _("legal name"),
    "problem": _("problem"),
    "WhatsApp identity": _("WhatsApp identity"),
    "document changed": _("document changed by the customer"),
    "required documents (rules)": _("required documents (rules)"),
    "required documents (llm)": _("required documents (model)"),
}


def finding(check: str, code: str, **params) -> dict:
    """A finding as recorded: the English text (the msgid filled in, never translated) and its
    code."""
    text = FINDING_TEXTS[code] % params if params else FINDING_TEXTS[code]
    return {"check": check, "result": text, "code": code, "params": params}


def kind_name(kind: str) -> str:
    """A document kind's name in the reader's language (the code itself when unknown)."""
    from processes.onboarding.models import DocumentKind

    return str(DocumentKind(kind).label) if kind in DocumentKind.values else kind


def finding_shown(item: dict) -> dict:
    """A recorded finding in the reader's language: a known code is translated with its params
    (each param as recorded: names, statuses and CNPJs are not words to translate)."""
    check = item.get("check", "")
    shown = {**item, "check": gettext(CHECK_LABELS[check]) if check in CHECK_LABELS else check}
    code, params = item.get("code"), item.get("params") or {}
    if code == "documents_missing":
        params = {
            **params,
            "kinds": ", ".join(
                kind_name(kind.strip()) for kind in params.get("kinds", "").split(",")
            ),
        }
    if code in ("document_withdrawn", "document_relabelled"):
        params = {
            **params,
            **{key: kind_name(params[key]) for key in ("kind", "was") if key in params},
        }
    if code in FINDING_TEXTS:
        try:
            shown["result"] = (
                gettext(FINDING_TEXTS[code]) % params if params else gettext(FINDING_TEXTS[code])
            )
        except (KeyError, TypeError, ValueError):
            pass  # a translation that does not fit its params: the recorded English stays
    return shown
