"""API tokens: issue one (its secret shown once), recognise it, list and revoke them.

A token is a random secret of 256 bits; the database keeps its SHA-256 digest. A fast hash
is enough for a secret nobody chose (nothing to guess from a dictionary), and it lets a
request find its token by an indexed lookup instead of trying every row.
"""

import hashlib
import secrets
from datetime import timedelta
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from durable import clock, conf
from durable.errors import TokenNotFound, TokenRefused
from durable.models import ApiToken, TokenScope

PREFIX_LENGTH = 8
# last_used_at is a hint for whoever reviews tokens, not an audit trail: written at most
# once a minute per token, so a busy client costs no write per request.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class IssuedToken(NamedTuple):
    token: ApiToken
    secret: str  # what the client sends as "Authorization: Token <secret>"; stored nowhere


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def token_create(
    user: AbstractBaseUser, *, scope: str, days: int | None = None, name: str = ""
) -> IssuedToken:
    """A new token for ``user``, valid for ``days`` (DURABLE_API_TOKEN_DAYS unless given).

    The token never grants more than its user's permissions: a read token of an operator
    only reads, an operate token of a viewer still only reads.
    """
    if scope not in TokenScope.values:
        raise ValueError(f"scope must be one of {', '.join(TokenScope.values)}, not {scope!r}")
    days = conf.api_token_days() if days is None else days
    if days < 1:
        raise ValueError("a token must be valid for at least one day")
    secret = secrets.token_urlsafe(32)
    now = clock.now()
    token = ApiToken.objects.create(
        user=user,
        digest=digest(secret),
        prefix=secret[:PREFIX_LENGTH],
        scope=scope,
        name=name,
        created_at=now,
        expires_at=now + timedelta(days=days),
    )
    return IssuedToken(token, secret)


def token_authenticate(secret: str) -> ApiToken:
    """The live token whose secret this is, its use noted; TokenRefused otherwise."""
    token = ApiToken.objects.select_related("user").filter(digest=digest(secret)).first()
    if token is None:
        raise TokenRefused("Invalid token.")
    now = clock.now()
    if token.revoked_at is not None:
        raise TokenRefused("Token revoked.")
    if token.expires_at <= now:
        raise TokenRefused("Token expired.")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def token_revoke(token_id: int) -> ApiToken:
    """Refuse the token from now on; the row stays, so the list still says who held it."""
    now = clock.now()
    ApiToken.objects.filter(pk=token_id, revoked_at__isnull=True).update(revoked_at=now)
    token = ApiToken.objects.filter(pk=token_id).first()  # read after the write: as stored
    if token is None:
        raise TokenNotFound(f"no API token with id {token_id}")
    return token


def tokens_listed() -> QuerySet[ApiToken]:
    return ApiToken.objects.select_related("user").order_by("-created_at", "-id")


def token_state(token: ApiToken) -> str:
    """``active``, ``expired`` or ``revoked``, as of now."""
    if token.revoked_at is not None:
        return "revoked"
    return "expired" if token.expires_at <= clock.now() else "active"
