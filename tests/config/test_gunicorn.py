"""The production web stack: gunicorn on config.settings with the documented environment, static
files from whitenoise, HTTPS behind the proxy header."""

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from django.conf import settings

from tests.config.test_production_settings import documented_environment
from tests.support import ROOT, database_url

pytestmark = pytest.mark.slow

HOST = "ops.example.com"  # ALLOWED_HOSTS of deploy/durable.env.example


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def gunicorn_dir(tmp_path_factory):
    """gunicorn's var dir, media and log (gunicorn.log: its access and error log)."""
    return tmp_path_factory.mktemp("gunicorn")


@pytest.fixture(scope="module")
def gunicorn(gunicorn_dir, django_db_setup):
    """One gunicorn for the module, on the test database (the pages read no rows)."""
    tmp_path = gunicorn_dir
    env = {
        **documented_environment(),
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DURABLE_VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
        "DATABASE_URL": database_url(),
        "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
    }
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=300,
    )
    port = free_port()
    log = (tmp_path / "gunicorn.log").open("w")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "config.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--access-logfile",
            "-",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"gunicorn did not start:\n{(tmp_path / 'gunicorn.log').read_text()}"
                    ) from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        log.close()


def fetch(url: str, *, https: bool = True, **headers: str):
    """GET as the proxy would forward it: the public host, and the scheme it terminated."""
    request = urllib.request.Request(url, headers={"Host": HOST, **headers})
    if https:
        request.add_header("X-Forwarded-Proto", "https")
    try:
        return urllib.request.build_opener(NoRedirects).open(request, timeout=30)
    except urllib.error.HTTPError as response:
        return response


def test_gunicorn_serves_the_login_page_over_https_with_hsts_and_secure_cookies(gunicorn):
    response = fetch(gunicorn + "/login/")

    page = response.read().decode()
    assert response.status == 200
    assert "csrfmiddlewaretoken" in page
    assert response.headers["Strict-Transport-Security"].startswith("max-age=31536000")
    assert (
        "Secure" in response.headers["Set-Cookie"]
        and "csrftoken=" in response.headers["Set-Cookie"]
    )


def test_gunicorn_serves_static_files_compressed_through_whitenoise(gunicorn):
    plain = fetch(gunicorn + "/static/admin/css/base.css")
    compressed = fetch(gunicorn + "/static/admin/css/base.css", **{"Accept-Encoding": "gzip"})

    assert plain.status == 200 and plain.headers["Content-Type"].startswith("text/css")
    assert b"body" in plain.read()
    assert compressed.status == 200 and compressed.headers["Content-Encoding"] == "gzip"


def test_plain_http_is_redirected_to_https(gunicorn):
    response = fetch(gunicorn + "/login/", https=False)

    assert response.status == 301
    assert response.headers["Location"] == f"https://{HOST}/login/"


def test_the_access_log_shows_the_webhook_verification_without_its_token(gunicorn, gunicorn_dir):
    fetch(
        gunicorn + "/api/webhooks/whatsapp/?hub.mode=subscribe"
        "&hub.verify_token=s3cret-verify&hub.challenge=7"
    )

    deadline = time.monotonic() + 10
    # The access line itself: Django's own error line for the 503 names the path first.
    while '"GET /api/webhooks/whatsapp/' not in (
        log := (gunicorn_dir / "gunicorn.log").read_text()
    ):
        assert time.monotonic() < deadline, log
        time.sleep(0.1)
    assert "/api/webhooks/whatsapp/?hub.mode=subscribe&hub.verify_token=***&hub.challenge=7" in log
    assert "s3cret-verify" not in log
