"""Project-level HTTP that belongs to no app."""

from pathlib import Path

from django.http import HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_safe

FAVICON = Path(__file__).with_name("favicon.ico").read_bytes()


@require_safe
@cache_control(public=True, max_age=7 * 24 * 3600)
def favicon(request):
    """Browsers fetch /favicon.ico on every first page; without it each login logs a 404."""
    return HttpResponse(FAVICON, content_type="image/x-icon")
