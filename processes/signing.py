"""HMAC-SHA256 signatures of raw webhook bodies, as the WhatsApp Cloud API sends them.

Check the signature before parsing anything: a forged body must not reach the JSON
parser, the database or a workflow.
"""

import hashlib
import hmac

PREFIX = "sha256="


def sign(body: bytes, secret: str) -> str:
    """The header value (``sha256=<hex>``) a provider would send for ``body``."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def is_valid(body: bytes, header: str | None, secret: str) -> bool:
    """Constant-time comparison of the header with the expected signature."""
    if not header or not secret:
        return False
    return hmac.compare_digest(sign(body, secret).encode(), header.strip().encode())


def same_secret(given: str, expected: str) -> bool:
    """Constant-time equality of two tokens (the verify token of the GET handshake)."""
    return bool(expected) and hmac.compare_digest(given.encode(), expected.encode())
