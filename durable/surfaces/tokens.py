"""The REST API's token authentication and the scope check every API view makes.

Clients keep sending ``Authorization: Token <secret>``; the secret is checked against the
stored digests (durable/features/tokens.py), so a copy of the database authenticates nobody.
"""

from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.permissions import BasePermission

from durable.errors import TokenRefused
from durable.features import tokens
from durable.models import ApiToken


class ApiTokenAuthentication(TokenAuthentication):
    """DRF's header format (and its ``tokenAuth`` scheme in the schema), our tokens behind it."""

    def authenticate_credentials(self, key):
        try:
            token = tokens.token_authenticate(key)
        except TokenRefused as refused:
            raise exceptions.AuthenticationFailed(str(refused)) from None
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed("User inactive or deleted.")
        return token.user, token


class TokenScopeAllows(BasePermission):
    """A ``read`` token may GET, HEAD and OPTIONS only, whatever its user may do."""

    message = "This token may only read (scope 'read'): use an 'operate' token."
    code = "token_scope"

    def has_permission(self, request, view):
        token = request.auth
        return not isinstance(token, ApiToken) or token.allows(request.method)
