"""The standard texts of an onboarding decision (approvals/customer_messages.py): messages a
reviewer can send the customer with the outcome (the customer reads them in Portuguese, the
reviewer picks them in their own language), and standard reasons, the internal rationale
that stays with compliance and the auditors."""

from django.utils.translation import gettext_lazy as _

from approvals.customer_messages import register_customer_messages, register_reasons

MESSAGES = {
    "reject": {
        "documents_inconsistent": _(
            "The documents sent did not let us confirm the company's details."
        ),
        "cnpj_situation": _(
            "The CNPJ's situation at the Receita Federal does not allow opening the account."
        ),
        "activity_not_served": _("We do not serve companies with this activity at the moment."),
    },
    "more_documents": {
        "address_recent": _(
            "Send a proof of address in the company's name, from the last three months."
        ),
        "articles_updated": _("Send the articles of association with their latest amendment."),
        "selfie_clear": _(
            "Send a clear selfie of the person responsible, holding an ID with a photo."
        ),
        "legal_name": _(
            "Write the company's legal name exactly as it is in the articles of association."
        ),
    },
}

register_customer_messages("onboarding", MESSAGES)

# The reviewers' standard reasons (internal: compliance and the auditors read them).
REASONS = {
    "reject": {
        "identity_not_confirmed": _(
            "The documents do not confirm who the company and its representative are."
        ),
        "cnpj_inactive": _("The CNPJ is not active at the Receita Federal."),
        "name_mismatch": _("The legal name given does not match the registry's."),
        "cnpj_taken": _("The CNPJ already belongs to another customer."),
    },
    "more_documents": {
        "address_outdated": _(
            "The proof of address is older than three months or not in the company's name."
        ),
        "articles_outdated": _("The articles of association lack the latest amendment."),
        "selfie_unreadable": _("The selfie does not let us compare the face with an ID."),
    },
}

register_reasons("onboarding", REASONS)
