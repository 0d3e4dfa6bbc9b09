"""The language of every page: the signed-in user's stored choice, else the language cookie
(chosen on the sign-in page), else LANGUAGE_CODE.

The browser's Accept-Language is deliberately not consulted: the team works in Portuguese
whatever their laptop's locale says, and switches to English per user (approvals.services
.reviewer_language_set), so two colleagues on one case always read the same labels unless
one of them chose otherwise.
"""

import zoneinfo

from django.conf import settings
from django.utils import timezone, translation
from django.utils.cache import patch_vary_headers

from approvals.selectors import reviewer_language


def supported(language: str | None) -> str | None:
    """``language`` if the project offers it (case-insensitive), else None."""
    codes = {code.lower(): code for code, _ in settings.LANGUAGES}
    return codes.get((language or "").lower())


class UserLanguageMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def language_for(self, request) -> str:
        user = getattr(request, "user", None)
        stored = reviewer_language(user) if user is not None and user.is_authenticated else None
        return (
            supported(stored)
            or supported(request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME))
            or settings.LANGUAGE_CODE
        )

    def __call__(self, request):
        language = self.language_for(request)
        translation.activate(language)
        request.LANGUAGE_CODE = translation.get_language()
        try:
            response = self.get_response(request)
        finally:
            translation.deactivate()
        response.headers.setdefault("Content-Language", language)
        patch_vary_headers(response, ("Cookie",))
        return response


class ReviewerTimeZoneMiddleware:
    """Every page, the admin's included, shows times in the team's zone (REVIEWER_TIME_ZONE,
    São Paulo by default): the queue, a case, the dashboard and a run's page agree on a
    moment. Stored times and logs stay UTC, and so does what machines read (the API, the
    webhooks' answers, /metrics)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(("/api/", "/metrics")):
            return self.get_response(request)
        with timezone.override(zoneinfo.ZoneInfo(settings.REVIEWER_TIME_ZONE)):
            return self.get_response(request)
