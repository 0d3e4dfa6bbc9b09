"""The standard messages a reviewer can send an onboarding customer with the outcome
(approvals/customer_messages.py): the customer reads them in Portuguese, the reviewer picks
them in their own language. The reviewer's reason is never among them: it stays with compliance."""
from django.utils.translation import gettext_lazy as _

from approvals.customer_messages import register_customer_messages

MESSAGES = {
    "reject": {
        "documents_inconsistent": _("The documents sent did not let us confirm the company's details."),
        "cnpj_situation": _("The CNPJ's situation at the Receita Federal does not allow opening the account."),
        "activity_not_served": _("We do not serve companies with this activity at the moment."),
    },
    "more_documents": {
        "address_recent": _("Send a proof of address in the company's name, from the last three months."),
        "articles_updated": _("Send the articles of association with their latest amendment."),
        "selfie_clear": _("Send a clear selfie of the person responsible, holding an ID with a photo."),
        "legal_name": _("Write the company's legal name exactly as it is in the articles of association."),
    },
}

register_customer_messages("onboarding", MESSAGES)
