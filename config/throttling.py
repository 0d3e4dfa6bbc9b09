"""API throttling: token-authenticated clients only, counted in the cache web and workers share."""

import time

from django.core.cache import caches
from rest_framework.authentication import TokenAuthentication
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle


class TokenClientThrottle(SimpleRateThrottle):
    """Limits each API token to the "token" rate across every web process.

    Requests without a token (an operator's session, the signed webhooks, whose senders
    retry and must never be refused for volume) pass untouched.
    """

    scope = "token"

    def __init__(self):
        self.cache = caches["durable"]
        super().__init__()

    def get_rate(self):
        return api_settings.DEFAULT_THROTTLE_RATES[
            self.scope
        ]  # read now, so a settings change applies

    def timer(self) -> float:
        # DRF keeps ``timer = time.time`` as a class attribute; when strict mode has wrapped
        # time.time in a Python function, that attribute would bind as a method.
        return time.time()

    def get_cache_key(self, request, view):
        if not isinstance(getattr(request, "successful_authenticator", None), TokenAuthentication):
            return None
        # Counted per token, under its digest: the secret is not kept anywhere, here neither.
        return self.cache_format % {"scope": self.scope, "ident": request.auth.digest[:32]}


def document_throttling(result, generator, request, public):
    """drf-spectacular hook: every operation a token may call can answer 429 (Retry-After set)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if any("tokenAuth" in requirement for requirement in operation.get("security", [])):
                operation["responses"].setdefault(
                    "429",
                    {
                        "description": (
                            "Too many requests for this token (API_TOKEN_THROTTLE_RATE); "
                            "the Retry-After header says when to try again."
                        ),
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                        },
                    },
                )
    return result
