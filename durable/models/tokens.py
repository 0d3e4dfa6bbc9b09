"""API tokens: who may call the REST API, for what, and until when. Imported by durable.models.

Only the SHA-256 digest of a token's secret is stored: a copy of the database (a backup, a
read replica, a support dump) holds nothing a client could present. The secret is shown
once, when the token is created (durable/features/tokens.py).
"""

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

# A token of this scope may only read; every other method needs an "operate" token.
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


class TokenScope(models.TextChoices):
    READ = "read", pgettext_lazy("API token scope", "read")
    OPERATE = "operate", pgettext_lazy("API token scope", "operate")


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="api_tokens",
        verbose_name=_("user"),
    )
    # hex SHA-256 of the secret: the lookup key, never the secret itself
    digest = models.CharField(max_length=64, unique=True)
    # The secret's first characters, to recognise a token in a list or a client's configuration.
    prefix = models.CharField(_("prefix"), max_length=8)
    scope = models.CharField(_("scope"), max_length=16, choices=TokenScope.choices)
    name = models.CharField(
        _("name"),
        max_length=100,
        blank=True,
        default="",
        help_text=_("What the token is for, e.g. the client that holds it."),
    )
    created_at = models.DateTimeField(_("created at"))
    expires_at = models.DateTimeField(_("expires at"))
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)
    revoked_at = models.DateTimeField(_("revoked at"), null=True, blank=True)

    class Meta:
        verbose_name = _("API token")
        verbose_name_plural = _("API tokens")
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.prefix}… ({self.user})"

    def allows(self, method: str) -> bool:
        """A read token may only read; an operate token may do whatever its user may."""
        return self.scope == TokenScope.OPERATE or method.upper() in SAFE_METHODS
