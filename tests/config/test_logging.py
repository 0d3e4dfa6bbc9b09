"""What the logs show: each record once, a refused request in one line, no 404 per page, no
secret from a URL (runserver's lines here, gunicorn's in test_gunicorn.py)."""

import io
import logging
import runpy
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.core.servers.basehttp import WSGIRequestHandler
from gunicorn.config import Config

from tests.support import ROOT, run_python

VERIFY_TOKEN = "s3cret-verify-token"
VERIFICATION = (
    f"/api/webhooks/whatsapp/?hub.mode=subscribe&hub.verify_token={VERIFY_TOKEN}"
    "&hub.challenge=1158201444"
)

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
    result = run_python(
        "-c",
        FORBIDDEN_REQUEST,
        var_dir=tmp_path,
        DEBUG=debug,
        SECRET_KEY="k" * 50,
        DJANGO_SETTINGS_MODULE="config.settings",
    )

    assert result.stdout.strip() == "403", result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert (
        "WARNING django.request" in lines[0]
        and "Forbidden (Permission denied): /approvals/" in lines[0]
    )


def test_a_server_error_still_logs_its_traceback(caplog):
    try:
        raise ValueError("boom")
    except ValueError:  # as Django's handler logs a 500
        logging.getLogger("django.request").error(
            "Internal Server Error: %s", "/x", exc_info=True, extra={"status_code": 500}
        )

    assert caplog.records[-1].exc_info[0] is ValueError


def test_the_favicon_browsers_ask_for_on_every_first_page_is_served(client):
    response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] == "image/x-icon"
    assert response.content[:4] == b"\x00\x00\x01\x00"  # an ICO header


@pytest.fixture
def console():
    """What the project's console handler writes, while the test runs."""
    handler = next(handler for handler in logging.getLogger().handlers if handler.name == "console")
    written = io.StringIO()
    previous = handler.setStream(written)
    yield written
    handler.setStream(previous)


def test_runserver_logs_the_webhook_verification_without_its_token(console):
    request = WSGIRequestHandler.__new__(WSGIRequestHandler)  # as runserver answers Meta's GET
    request.request, request.requestline = None, f"GET {VERIFICATION} HTTP/1.1"

    request.log_request(200, 10)

    line = console.getvalue()
    assert "hub.verify_token=***&hub.challenge=1158201444" in line
    assert VERIFY_TOKEN not in line


def test_any_log_record_that_carries_the_verify_token_is_scrubbed(console):
    logging.getLogger("processes.api").warning(
        "refused %s", VERIFICATION.replace("hub.verify", "hub%2Everify")
    )

    assert "hub%2Everify_token=***&" in console.getvalue()
    assert VERIFY_TOKEN not in console.getvalue()


def test_gunicorns_access_log_shows_the_verification_request_without_its_token(tmp_path):
    config = Config()
    config.set("logger_class", runpy.run_path(str(ROOT / "gunicorn.conf.py"))["logger_class"])
    config.set("accesslog", str(tmp_path / "access.log"))
    path, query = VERIFICATION.split("?")
    environ = {
        "REQUEST_METHOD": "GET",
        "RAW_URI": VERIFICATION,
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }
    response = SimpleNamespace(status="200 OK", sent=10, headers=[("Content-Type", "text/plain")])

    config.logger_class(config).access(
        response, SimpleNamespace(headers=[]), environ, timedelta(milliseconds=4)
    )

    line = (tmp_path / "access.log").read_text()
    assert (
        '"GET /api/webhooks/whatsapp/?hub.mode=subscribe'
        "&hub.verify_token=***&hub.challenge=1158201444" in line
    )
    assert VERIFY_TOKEN not in line
