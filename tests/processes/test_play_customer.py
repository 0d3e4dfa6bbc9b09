"""scripts/play_customer.py, the customer a newcomer plays against ./scripts/run."""

import socket
import subprocess
import sys

import pytest

from processes.whatsapp.models import InboundMessage
from tests.support import ROOT

pytestmark = pytest.mark.integration


def play(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "scripts/play_customer.py", *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


def test_an_app_that_is_not_there_is_one_line_naming_base_url_not_a_traceback():
    result = play("text", "Oi", "--base-url", f"http://127.0.0.1:{closed_port()}")

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    assert "cannot reach the app at http://127.0.0.1:" in line and "--base-url" in line


@pytest.mark.django_db(transaction=True)
def test_base_url_points_the_customer_at_an_app_on_another_port(live_server, settings):
    result = play(
        "text",
        "Oi, quero abrir uma conta PJ",
        "--from",
        "5511900000042",
        "--base-url",
        live_server.url,
        WHATSAPP_APP_SECRET=settings.WHATSAPP_APP_SECRET,
    )

    assert result.returncode == 0, result.stderr
    assert InboundMessage.objects.filter(sender_wa_id="5511900000042").count() == 1
