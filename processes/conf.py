"""The processes' settings, read at call time so tests can override them."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def secret(name: str) -> str:
    """A secret from settings; refusing to run without one beats accepting unsigned input."""
    value = getattr(settings, name, "")
    if not value:
        raise ImproperlyConfigured(f"{name} is not set (set it in the environment)")
    return value


def setting(name: str, default=None):
    return getattr(settings, name, default)
