"""The engine's settings are all DURABLE_*; the names a few had before are still read."""

from pathlib import Path

from durable import conf
from durable.runtime import determinism


def test_the_durable_name_wins_over_the_former_one(settings):
    settings.DURABLE_METRICS_TOKEN = "new"
    settings.METRICS_TOKEN = "old"

    assert conf.metrics_token() == "new"


def test_a_project_that_still_sets_the_former_names_keeps_working(settings):
    for name in ("DURABLE_METRICS_TOKEN", "DURABLE_API_TOKEN_DAYS", "DURABLE_VAR_DIR"):
        delattr(settings, name)
    settings.METRICS_TOKEN = "old-token"
    settings.API_TOKEN_DAYS = 30
    settings.VAR_DIR = "/srv/old-var"
    settings.DURABLE_AUDIT_HEADS_FILE = ""

    assert (conf.metrics_token(), conf.api_token_days(), conf.audit_heads_file()) == (
        "old-token",
        30,
        str(Path("/srv/old-var/audit/heads.jsonl")),
    )


def test_without_any_name_the_defaults_hold(settings):
    for name in (
        "DURABLE_METRICS_TOKEN",
        "METRICS_TOKEN",
        "DURABLE_API_TOKEN_DAYS",
        "API_TOKEN_DAYS",
        "DURABLE_BASE_DIR",
        "BASE_DIR",
    ):
        if hasattr(settings, name):
            delattr(settings, name)

    assert (conf.metrics_token(), conf.api_token_days(), determinism.display_path("/a/b.py")) == (
        "",
        90,
        "/a/b.py",
    )


def test_warnings_show_paths_from_the_projects_root(settings, tmp_path):
    settings.DURABLE_BASE_DIR = tmp_path

    assert determinism.display_path(str(tmp_path / "app" / "workflows.py")) == str(
        Path("app/workflows.py")
    )
