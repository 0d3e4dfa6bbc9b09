"""Start web, Celery worker and Celery beat together, and stop all of them together.

Each child gets its own process group. On Ctrl-C, SIGTERM, or any child exiting, every
group gets SIGTERM, then SIGKILL after a grace period: a Celery worker with embedded beat
on the filesystem transport has been seen to ignore SIGTERM, so nothing is left behind.
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


def commands(host: str, port: int, concurrency: int) -> dict[str, list[str]]:
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "config"]
    return {
        "web": [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
        "worker": [*celery, "worker", "--loglevel", "INFO", "--concurrency", str(concurrency),
                   "--hostname", "worker@%h"],
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
    for name, command in commands(options.host, options.port, options.concurrency).items():
        children[name] = subprocess.Popen(command, cwd=ROOT, start_new_session=True)
        print(f"[run] started {name} (pid {children[name].pid})", flush=True)
    print(f"[run] web on http://{options.host}:{options.port}/ - Ctrl-C stops everything", flush=True)
    code = 0
    try:
        while not stopping:
            for name, proc in children.items():
                if proc.poll() is not None:
                    print(f"[run] {name} exited with {proc.returncode}; stopping the rest", flush=True)
                    code, stopping = proc.returncode or 1, True
                    break
            time.sleep(0.2)
    finally:
        stop(children)
    return code


if __name__ == "__main__":
    sys.exit(main())
