"""Refuse a request whose path, query or form carries a NUL or another control character.

PostgreSQL cannot hold a NUL in text (psycopg raises before the query is sent), so a ``%00``
in a filter, a reason or an id used to answer 500 wherever it reached a query; nobody types
the other C0 controls either. One check for the reviewer UI and the admin, paths, query
strings and form fields (urlencoded or multipart; not the files): a 400 naming the field,
before any view reads it. Tabs and line breaks stay allowed (reasons are multi-line). Under
/api/ (the engine's API, the invoice operations and the webhooks) each view checks its own
input against its schema (schemathesis tests that) and answers in its own format: a NUL in a
JSON string is a 400 ``invalid``, in a path part a 404 (durable.surfaces.api); the webhooks
store what they can (processes.webhooks).
"""

import re

from django.http import HttpResponseBadRequest

API_PREFIX = "/api/"
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _offending(request) -> str | None:
    if CONTROL.search(request.path):
        return "the address"
    for source in [request.GET, *([request.POST] if request.method == "POST" else [])]:
        for name, values in source.lists():
            if CONTROL.search(name) or any(CONTROL.search(value) for value in values):
                return repr(name.replace("\x00", "\\x00"))
    return None


class ControlCharacterGuard:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith(API_PREFIX):  # the API checks its own input, as its schema says
            return self.get_response(request)
        where = _offending(request)
        if where is None:
            return self.get_response(request)
        return HttpResponseBadRequest(
            f"{where} contains a control character (such as NUL), which no field accepts.",
            content_type="text/plain; charset=utf-8",
        )
