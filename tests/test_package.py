"""The engine's wheel holds the engine alone, with what Django loads from its app folder:
templates, static files, the compiled translations and the migrations.

Slow: building fetches the build backend from the package index into an isolated env.
"""

import re
import shutil
import subprocess
import sys
import zipfile

import pytest

from durable import __version__
from tests.support import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    source = tmp_path_factory.mktemp("source")
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copytree(
        ROOT / "durable", source / "durable", ignore=shutil.ignore_patterns("__pycache__")
    )
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "--wheel-dir",
            str(dist),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (path,) = dist.glob("django_durable_flows-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


@pytest.fixture(scope="module")
def wheel_files(wheel) -> set[str]:
    return set(wheel.namelist())


def test_the_wheel_ships_the_engines_templates_static_files_translations_and_migrations(
    wheel_files,
):
    expected = {
        "durable/templates/admin/durable/workflowrun/change_form.html",
        "durable/templates/durable/swagger_ui.html",
        "durable/static/durable/admin.css",
        "durable/static/durable/admin.js",
        "durable/locale/pt_BR/LC_MESSAGES/django.mo",
        "durable/migrations/0001_initial.py",
        "durable/management/commands/durable.py",
        "durable/README.md",
    }
    every_migration = {
        path.relative_to(ROOT).as_posix() for path in (ROOT / "durable/migrations").glob("*.py")
    }

    assert expected <= wheel_files
    assert every_migration <= wheel_files


def test_the_wheel_holds_nothing_of_the_site(wheel_files):
    top_level = {name.split("/")[0] for name in wheel_files}

    assert top_level == {"durable", next(name for name in top_level if name.endswith(".dist-info"))}
    assert not [
        name
        for name in wheel_files
        if name.startswith(("processes/", "approvals/", "config/", "tests/"))
    ]


def test_celery_redis_the_api_and_opentelemetry_are_extras_not_requirements(wheel):
    metadata = wheel.read(f"django_durable_flows-{__version__}.dist-info/METADATA").decode()
    required = {
        re.match(r"\s*([\w.-]+)", line.split(":", 1)[1]).group(1).lower()
        for line in metadata.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    }
    extras = {
        line.split(":", 1)[1].strip()
        for line in metadata.splitlines()
        if line.startswith("Provides-Extra:")
    }

    assert required == {"django", "django-fsm-2", "cronsim"}
    assert extras == {"celery", "redis", "api", "otel"}
