"""django-axes (the login lockouts) ships no pt-BR catalogue, so its admin pages read in
English in a Portuguese admin. Its labels are listed here for makemessages to put in the
project's catalogue, which Django prefers to an app's own (LOCALE_PATHS). Nothing imports it."""

from django.utils.translation import gettext_noop

AXES_LABELS = [
    gettext_noop("access attempt"),
    gettext_noop("access attempts"),
    gettext_noop("Access Attempt"),
    gettext_noop("access attempt expiration"),
    gettext_noop("access attempt expirations"),
    gettext_noop("access failure"),
    gettext_noop("access failures"),
    gettext_noop("access log"),
    gettext_noop("access logs"),
    gettext_noop("Access lock out"),
    gettext_noop("Attempt Remaining"),
    gettext_noop("Attempt Time"),
    gettext_noop("Clean up expired attempts"),
    gettext_noop("Expires At"),
    gettext_noop("Failed Logins"),
    gettext_noop("Form Data"),
    gettext_noop("GET Data"),
    gettext_noop("HTTP Accept"),
    gettext_noop("IP Address"),
    gettext_noop("Locked Out"),
    gettext_noop("Logout Time"),
    gettext_noop("Meta Data"),
    gettext_noop("Not set"),
    gettext_noop("POST Data"),
    gettext_noop("Path"),
    gettext_noop("Session key hash (sha256)"),
    gettext_noop("The time when access attempt expires and is no longer valid."),
    gettext_noop("User Agent"),
    gettext_noop("Username"),
]
