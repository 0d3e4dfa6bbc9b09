"""The advance messages of a web process go on a thread of their own: a caller of run_start or
signal_send waits for its commit, not for the broker; a worker sends in line; nothing is sent
twice across a fork, and nothing submitted is dropped at a normal exit."""

import os
import threading

import pytest

from durable import services, tasks
from durable.runtime.publisher import publisher
from tests.support import run_python

pytestmark = pytest.mark.django_db


@pytest.fixture
def broker(monkeypatch, settings):
    """Celery's publish of an advance, held until the test lets the broker answer."""
    settings.DURABLE_DISPATCHER = "celery"
    monkeypatch.setattr(publisher, "in_line", False)
    answers, sent = threading.Event(), []

    def publish(args, kwargs, **options):
        assert answers.wait(10), "the broker was never let answer"
        sent.append(args[0])

    monkeypatch.setattr(tasks.advance, "apply_async", publish)
    yield answers, sent
    answers.set()
    assert publisher.flush()


def test_run_start_and_signal_send_return_at_their_commit_and_their_messages_follow_in_order(
    broker, django_capture_on_commit_callbacks
):
    answers, sent = broker
    with django_capture_on_commit_callbacks(execute=True):
        run = services.run_start("step_wait_step", id="publisher:1", actor="test")
    with django_capture_on_commit_callbacks(execute=True):
        services.signal_send(run.id, "go", {"value": 1}, actor="test")

    assert sent == []  # both calls returned while the broker had not answered
    answers.set()
    assert publisher.flush()
    assert sent == ["publisher:1", "publisher:1"]


def test_a_worker_sends_its_advances_before_its_call_returns(
    broker, monkeypatch, django_capture_on_commit_callbacks
):
    answers, sent = broker
    answers.set()
    monkeypatch.setattr(publisher, "in_line", True)  # as worker_init sets it

    with django_capture_on_commit_callbacks(execute=True):
        services.run_start("step_wait_step", id="publisher:2", actor="test")

    assert sent == ["publisher:2"]


STARTS_AS_A_WORKER = """
import config.celery  # as `celery -A config` loads the app, then Django with it
import django
django.setup()
from celery import signals
from durable.runtime.publisher import publisher
before = publisher.in_line
getattr(signals, "{signal}").send(sender=None)
print(before, publisher.in_line)
"""


@pytest.mark.parametrize("signal", ["worker_init", "worker_process_init"])
def test_a_worker_and_each_of_its_pool_processes_send_in_line_once_started(tmp_path, signal):
    """What a web process is (a thread sends its messages) until Celery starts a worker in
    it, as the worker command and each forked pool process do."""
    result = run_python(
        "-c",
        STARTS_AS_A_WORKER.format(signal=signal),
        var_dir=tmp_path,
        DJANGO_SETTINGS_MODULE="config.settings",
        DEBUG="1",
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]


def test_a_send_that_fails_is_logged_and_the_next_message_still_goes(monkeypatch, caplog):
    monkeypatch.setattr(publisher, "in_line", False)
    sent = []

    def refused():
        raise ConnectionError("broker gone")

    publisher.submit(refused)
    publisher.submit(lambda: sent.append("next"))

    assert publisher.flush()
    assert sent == ["next"]
    assert "the sweep will" in caplog.text


def test_a_forked_child_has_neither_its_parents_messages_nor_its_thread(monkeypatch):
    monkeypatch.setattr(publisher, "in_line", False)
    held = threading.Event()
    publisher.submit(lambda: held.wait(10))

    child = os.fork()
    if child == 0:  # the child: a message of its parent's here would be sent twice
        os._exit(0 if publisher._thread is None and not publisher._queue.unfinished_tasks else 1)
    _, status = os.waitpid(child, 0)
    held.set()

    assert os.waitstatus_to_exitcode(status) == 0
    assert publisher.flush()


EXITS_AFTER_SUBMITTING = """
import time
from durable.runtime.publisher import publisher
publisher.submit(lambda: (time.sleep(0.3), print("sent", flush=True)))
"""


def test_a_process_that_exits_normally_sends_what_it_had_submitted(tmp_path):
    result = run_python("-c", EXITS_AFTER_SUBMITTING, var_dir=tmp_path)

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["sent"]
