"""Start web, Celery workers and Celery beat together, keep them up, and stop them together.

Three workers, as in production (docs/operations.md): one for the default queue, one for
``llm``, the document checks that wait seconds on a language model, so that they never hold
up the steps that send messages, and one for the sweep's own queue, so that timers and
takeovers are found on time however long the default queue's backlog is.

Each child gets its own process group. A child that exits is started again, after a
back-off that grows while it keeps dying (as systemd's Restart=always would; see
docs/operations.md for production). On Ctrl-C or SIGTERM every group gets SIGTERM, then
SIGKILL after a grace period: a Celery worker with embedded beat on the filesystem
transport has been seen to ignore SIGTERM, so nothing is left behind.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRACE_SECONDS = 10
# A child that ran this long before dying starts again at once; one that keeps dying
# waits 1, 2, 4 ... seconds, at most MAX_BACKOFF_SECONDS.
STABLE_SECONDS = 60
MAX_BACKOFF_SECONDS = 30
LLM_QUEUE = (
    "llm"  # processes.whatsapp.limits.LLM_QUEUE (not imported: this script runs without Django)
)
SWEEP_QUEUE = "durable-sweep"  # config/settings.py DURABLE_SWEEP_QUEUE (not imported, as above)


def commands(host: str, port: int, concurrency: int) -> dict[str, list[str]]:
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "config"]
    return {
        "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
        "worker": [
            *celery,
            "worker",
            "--loglevel",
            "INFO",
            "--concurrency",
            str(concurrency),
            "--hostname",
            "worker@%h",
        ],
        "llm-worker": [
            *celery,
            "worker",
            "--loglevel",
            "INFO",
            "--pool",
            "threads",
            "--concurrency",
            "4",
            "-Q",
            LLM_QUEUE,
            "--hostname",
            "llm@%h",
        ],
        "sweep-worker": [
            *celery,
            "worker",
            "--loglevel",
            "INFO",
            "--pool",
            "solo",
            "-Q",
            SWEEP_QUEUE,
            "--hostname",
            "sweep@%h",
        ],
        "beat": [*celery, "beat", "--loglevel", "INFO"],
    }


def stop(children: dict[str, subprocess.Popen]) -> None:
    for proc in children.values():
        if proc.poll() is None:
            try:
                os.kill(proc.pid, signal.SIGTERM)  # the leader shuts its own children down
            except ProcessLookupError:
                pass
    deadline = time.monotonic() + GRACE_SECONDS
    for name, proc in children.items():
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            print(f"[run] {name} ignored SIGTERM; killing it", flush=True)
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left in its group
        except ProcessLookupError:
            pass
        proc.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--concurrency", type=int, default=2)
    options = parser.parse_args()

    children: dict[str, subprocess.Popen] = {}
    stopping = False

    def on_signal(signum, frame):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    specs = commands(options.host, options.port, options.concurrency)
    started_at: dict[str, float] = {}
    failures: dict[str, int] = dict.fromkeys(specs, 0)
    restart_at: dict[str, float] = {}

    def start(name: str) -> None:
        children[name] = subprocess.Popen(specs[name], cwd=ROOT, start_new_session=True)
        started_at[name] = time.monotonic()
        print(f"[run] started {name} (pid {children[name].pid})", flush=True)

    for name in specs:
        start(name)
    print(
        f"[run] web on http://{options.host}:{options.port}/ - Ctrl-C stops everything", flush=True
    )
    try:
        while not stopping:
            now = time.monotonic()
            for name, proc in list(children.items()):
                if name in restart_at or proc.poll() is None:
                    continue
                failures[name] = (
                    0 if now - started_at[name] > STABLE_SECONDS else failures[name] + 1
                )
                delay = min(2 ** (failures[name] - 1), MAX_BACKOFF_SECONDS) if failures[name] else 0
                print(
                    f"[run] {name} exited with {proc.returncode}; starting it again in {delay} s",
                    flush=True,
                )
                restart_at[name] = now + delay
            for name, when in list(restart_at.items()):
                if now >= when and not stopping:
                    del restart_at[name]
                    start(name)
            time.sleep(0.2)
    finally:
        stop(children)
    return 0


if __name__ == "__main__":
    sys.exit(main())
