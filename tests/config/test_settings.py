"""Settings read from the environment as a newcomer's shell sets them (a subprocess each)."""

import pytest

from tests.support import run_python

pytestmark = pytest.mark.integration

SHOW_BROKER = (
    "from django.conf import settings; "
    "print(settings.CELERY_BROKER_URL, settings.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in'])"
)
SHOW_STRICT = (
    "import django; django.setup(); from durable.runtime import strict; print(strict.installed())"
)


def test_an_empty_broker_url_means_the_embedded_filesystem_broker(tmp_path):
    result = run_python(
        "-c",
        SHOW_BROKER,
        var_dir=tmp_path,
        CELERY_BROKER_URL="",
        DJANGO_SETTINGS_MODULE="config.settings",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["filesystem://localhost/", str(tmp_path / "broker" / "queue")]


@pytest.mark.parametrize(
    ("env", "installed"),
    [
        ({"DEBUG": "1"}, "False"),
        ({"DEBUG": "1", "DURABLE_STRICT": "1"}, "True"),
    ],
    ids=["debug-alone", "explicit-strict"],
)
def test_outside_tests_strict_mode_is_on_only_when_asked_for(tmp_path, env, installed):
    result = run_python(
        "-c", SHOW_STRICT, var_dir=tmp_path, DJANGO_SETTINGS_MODULE="config.settings", **env
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == installed


SHOW_BEAT_CONFIRMS = (
    "import django; django.setup(); from config.celery import app; "
    "from celery.utils.imports import symbol_by_name as load; "
    "scheduler = load(app.conf.beat_scheduler)(app, lazy=True); "
    "print(scheduler.connection.transport_options.get('confirm_publish', False), "
    "load('config.beat:publish_options')({}).get('confirm_timeout'))"
)


@pytest.mark.parametrize(
    ("queue_type", "confirms"),
    [("quorum", ["True", "3.0"]), ("classic", ["False", "None"])],
)
def test_beat_publishes_with_confirms_only_to_quorum_queues(tmp_path, queue_type, confirms):
    """A beat channel opened during a quorum leader election may have all its publishes
    rejected; only confirms tell beat to reconnect (config/beat.py). No connection is made."""
    result = run_python(
        "-c",
        SHOW_BEAT_CONFIRMS,
        var_dir=tmp_path,
        DEBUG="1",
        CELERY_BROKER_URL="amqp://u:p@rabbit1:5672//;amqp://u:p@rabbit2:5672//",
        CELERY_QUEUE_TYPE=queue_type,
        DJANGO_SETTINGS_MODULE="config.settings",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == confirms
