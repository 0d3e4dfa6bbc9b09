"""What the logs show: each record once, a refused request in one line, no 404 per page."""
import logging

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
@pytest.mark.parametrize("debug", ["1", "0"], ids=["debug", "production"])
def test_a_403_is_one_line_with_its_path_and_no_traceback(tmp_path, debug):
    result = run_python("-c", FORBIDDEN_REQUEST, var_dir=tmp_path, DEBUG=debug, SECRET_KEY="k" * 50,
                        DJANGO_SETTINGS_MODULE="config.settings")

    assert result.stdout.strip() == "403", result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "WARNING django.request" in lines[0] and "Forbidden (Permission denied): /approvals/" in lines[0]


def test_a_server_error_still_logs_its_traceback(caplog):
    try:
        raise ValueError("boom")
    except ValueError:   # as Django's handler logs a 500
        logging.getLogger("django.request").error("Internal Server Error: %s", "/x", exc_info=True,
                                                  extra={"status_code": 500})

    assert caplog.records[-1].exc_info[0] is ValueError


def test_the_favicon_browsers_ask_for_on_every_first_page_is_served(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header
