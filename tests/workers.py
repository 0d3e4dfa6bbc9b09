"""Real Celery worker and beat subprocesses for integration tests, always cleaned up."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import redis
from django.conf import settings

from durable.runtime.publisher import publisher
from tests.support import ROOT, subprocess_env


class CeleryProcesses:
    """Starts workers and a beat against the test database; ``stop()`` leaves nothing behind."""

    def __init__(self, log_dir: Path, **env: str):
        self.log_dir = log_dir
        self.env = subprocess_env(DURABLE_DISPATCHER="celery", **env)
        self.procs: dict[str, subprocess.Popen] = {}

    def _start(
        self,
        name: str,
        args: list[str],
        ready: str | None,
        *,
        prefix: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen:
        """``prefix`` runs the process through another command (``ip netns exec <ns>``), which
        must exec it in place; ``env`` overrides this process's variables only."""
        log_path = self.log_dir / f"{name}.log"
        log = open(log_path, "ab")
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-m", "celery", "-A", "config", *args],
            cwd=ROOT,
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs[name] = proc
        if ready:
            deadline = time.monotonic() + 60
            while ready not in log_path.read_text(errors="replace"):
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited early:\n{log_path.read_text()[-3000:]}")
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{name} not ready:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.1)
        return proc

    def start_worker(
        self,
        name: str = "worker",
        concurrency: int = 2,
        *,
        pool: str = "prefork",
        queues: list[str] | None = None,
        **options,
    ) -> subprocess.Popen:
        """``queues``: the Celery queues it consumes (``-Q``); default, Celery's default queue."""
        return self._start(
            name,
            [
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(concurrency),
                "--pool",
                pool,
                "--hostname",
                f"{name}-{os.getpid()}@%h",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                *(["-Q", ",".join(queues)] if queues else []),
            ],
            ready="ready.",
            **options,
        )

    def start_beat(self, name: str = "beat", **options) -> subprocess.Popen:
        schedule = self.log_dir / f"{name}-schedule"
        return self._start(
            name,
            ["beat", "--loglevel", "INFO", "--schedule", str(schedule)],
            ready="maxinterval",
            **options,
        )

    def kill(self, name: str) -> None:
        """SIGKILL the process and every child in its group: the machine lost power."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def stop(self, grace: float = 5) -> None:
        """Cold shutdown (SIGQUIT: tests need no graceful drain), SIGKILL after ``grace``."""
        for proc in self.procs.values():
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGQUIT)
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        self.procs.clear()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
            for p in sorted(self.log_dir.glob("*.log"))
        )


def wait_until(predicate, *, timeout: float, interval: float = 0.05, message: str = "condition"):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message}")
        time.sleep(interval)


def empty_broker() -> None:
    """Drop messages a previous test left behind."""
    if settings.CELERY_BROKER_URL.startswith("redis"):
        redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
    elif settings.CELERY_BROKER_URL.startswith("amqp"):
        from config.celery import app

        with (
            app.connection_for_write() as connection
        ):  # a new one: a pooled one may predate a restart
            app.control.purge(connection=connection)
    else:
        queue = settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]
        shutil.rmtree(queue, ignore_errors=True)
        Path(queue).mkdir(parents=True, exist_ok=True)


@contextmanager
def celery_processes(log_dir: Path, **env: str):
    """Workers and beats for one test: their logs are printed if it fails, and none outlives it.
    The test process's own advances (durable/runtime/publisher.py) are sent before the broker
    is emptied and before the workers stop: none reaches another test's broker."""
    publisher.flush()
    empty_broker()
    processes = CeleryProcesses(log_dir, **env)
    try:
        yield processes
    except BaseException:
        print(processes.logs())
        raise
    finally:
        publisher.flush()
        processes.stop()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class PrivateRedis:
    """A redis-server of this test's own, so restarting it disturbs nobody else."""

    def __init__(self):
        self.port = free_port()
        self.proc = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self):
        self.proc = subprocess.Popen(
            [
                "redis-server",
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                assert time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=10)
