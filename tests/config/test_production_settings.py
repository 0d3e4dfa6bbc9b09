"""Production settings: a key is required without DEBUG, var/ is private, and check --deploy is
clean with the environment docs/operations.md documents (deploy/durable.env.example)."""

import os
import secrets
import stat
import subprocess
import sys

from tests.support import ROOT

EXAMPLE_ENV = ROOT / "deploy" / "durable.env.example"


def documented_environment() -> dict:
    lines = EXAMPLE_ENV.read_text().splitlines()
    pairs = (
        line.split("=", 1) for line in lines if line.strip() and not line.lstrip().startswith("#")
    )
    return {name.strip(): value.strip() for name, value in pairs}


def manage(*args: str, env: dict) -> subprocess.CompletedProcess:
    """Run manage.py on config.settings (the production module) with exactly this environment."""
    base = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_without_debug_and_without_a_secret_key_the_project_refuses_to_start(tmp_path):
    result = manage("check", env={"DURABLE_VAR_DIR": str(tmp_path / "var")})

    assert result.returncode != 0
    assert "SECRET_KEY is not set" in result.stderr
    assert not (tmp_path / "var" / "secret_key").exists()


def test_with_debug_a_local_key_is_made_readable_by_this_user_only(tmp_path):
    var = tmp_path / "var"

    result = manage("check", env={"DEBUG": "1", "DURABLE_VAR_DIR": str(var)})

    assert result.returncode == 0, result.stderr
    assert stat.S_IMODE((var / "secret_key").stat().st_mode) == 0o600
    assert stat.S_IMODE(var.stat().st_mode) == 0o700
    assert len((var / "secret_key").read_text()) >= 50


def test_a_var_folder_made_before_is_closed_to_other_users(tmp_path):
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)

    manage("check", env={"DEBUG": "1", "DURABLE_VAR_DIR": str(var)})

    assert stat.S_IMODE(var.stat().st_mode) == 0o700


def test_check_deploy_is_clean_with_the_documented_production_environment(tmp_path):
    env = {
        **documented_environment(),
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DURABLE_VAR_DIR": str(tmp_path / "var"),
        "MEDIA_ROOT": str(tmp_path / "media"),
    }

    result = manage("check", "--deploy", "--fail-level", "WARNING", env=env)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_documented_environment_asks_for_https_and_a_key_of_its_own():
    env = documented_environment()

    assert env["DEBUG"] == "0" and env["SECURE_HTTPS"] == "1"
    assert env["SECRET_KEY"] == "replace-with-a-generated-key"  # never a real key in the repository
    assert env["CSRF_TRUSTED_ORIGINS"].startswith("https://")


def test_secure_https_turns_on_redirect_hsts_and_secure_cookies_and_each_can_be_turned_off(
    tmp_path,
):
    env = {
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DURABLE_VAR_DIR": str(tmp_path / "var"),
        "SECURE_HTTPS": "1",
    }
    show = (
        "from django.conf import settings as s; print(s.SECURE_SSL_REDIRECT, "
        "s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.SECURE_HSTS_SECONDS)"
    )

    on = manage("shell", "--no-imports", "-c", show, env=env)
    off = manage("shell", "--no-imports", "-c", show, env={**env, "SECURE_SSL_REDIRECT": "0"})

    assert on.stdout.split() == ["True", "True", "True", str(365 * 24 * 3600)], on.stderr
    assert off.stdout.split()[0] == "False"
