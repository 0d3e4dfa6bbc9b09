"""The suite's own configuration: which tests may start a redis-server of their own."""

import pytest

from tests.conftest import _redis_server_wanted


@pytest.mark.parametrize(
    ("env", "wanted"),
    [
        ({}, False),
        ({"DURABLE_TEST_REDIS_SERVER": "1"}, True),
        ({"CELERY_BROKER_URL": "redis://127.0.0.1:6379/1"}, True),
        ({"CELERY_BROKER_URL": "", "DURABLE_TEST_REDIS_SERVER": "0"}, False),
    ],
    ids=["embedded-defaults", "asked-for", "redis-configuration", "empty-broker-url"],
)
def test_a_private_redis_server_is_started_only_on_redis_or_when_asked(monkeypatch, env, wanted):
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("DURABLE_TEST_REDIS_SERVER", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    assert _redis_server_wanted()[0] is wanted
