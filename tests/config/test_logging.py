"""What the logs show a newcomer running with DEBUG: each record once, and no 404 per page."""
import pytest

from tests.support import run_python

FORBIDDEN_REQUEST = """
import django
django.setup()
from django.core.exceptions import PermissionDenied
from django.core.handlers.exception import response_for_exception
from django.test import RequestFactory
try:
    raise PermissionDenied("not a reviewer")  # as a view refusing a non-reviewer does
except PermissionDenied as refused:
    print(response_for_exception(RequestFactory().get("/approvals/"), refused).status_code)
"""


@pytest.mark.integration
def test_a_403_logs_its_traceback_once_with_debug_on(tmp_path):
    result = run_python("-c", FORBIDDEN_REQUEST, var_dir=tmp_path, DEBUG="1",
                        DJANGO_SETTINGS_MODULE="config.settings")

    assert result.stdout.strip() == "403", result.stderr
    assert result.stderr.count("Forbidden (Permission denied): /approvals/") == 1, result.stderr
    assert result.stderr.count("Traceback (most recent call last)") == 1, result.stderr


def test_the_favicon_browsers_ask_for_on_every_first_page_is_served(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
