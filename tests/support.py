"""Helpers for tests that start other processes against the test database."""

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url() -> str:
    """The URL of the database this test is using (the test database, not the real one)."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{Path(db['NAME']).resolve()}"
    user = db.get("USER") or ""
    password = f":{db['PASSWORD']}" if db.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"


def subprocess_env(**overrides: str) -> dict:
    env = dict(os.environ)
    env.update(
        {
            "DATABASE_URL": database_url(),
            "DJANGO_SETTINGS_MODULE": "tests.settings",
            "PYTHONPATH": str(ROOT),
            "DURABLE_VAR_DIR": str(settings.VAR_DIR),
            "CELERY_BROKER_URL": settings.CELERY_BROKER_URL,
        }
    )
    env.update(overrides)
    return env


def project_env(var_dir: Path, **overrides: str) -> dict:
    """The environment of a fresh checkout: no service URLs, no test settings, its own var/."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name
        not in {
            "DATABASE_URL",
            "DATABASE_POOLER",
            "DATABASE_PREPARED_STATEMENTS",
            "CELERY_BROKER_URL",
            "DJANGO_SETTINGS_MODULE",
            "DEBUG",
            "DURABLE_STRICT",
            "DURABLE_DISPATCHER",
        }
    }
    env.update(DURABLE_VAR_DIR=str(var_dir), PYTHONPATH=str(ROOT), **overrides)
    return env


def run_python(
    *args: str, var_dir: Path, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    """Run the project's Python (``manage.py ...`` or ``-c ...``) as a newcomer would."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env=project_env(var_dir, **env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
