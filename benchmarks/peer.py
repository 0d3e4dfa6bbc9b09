"""The peer's process seen from our bench: DBOS in its own virtualenv, driven by JSON lines."""

import json
import os
import signal
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Peer:
    """DBOS in its own virtualenv and processes (benchmarks/peers/dbos_bench.py), driven by JSON
    lines."""

    def __init__(self, python: str, url: str, workers: int):
        self.proc = subprocess.Popen(
            [
                python,
                str(ROOT / "benchmarks" / "peers" / "dbos_bench.py"),
                "--database-url",
                url,
                "--workers",
                str(workers),
            ],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        hello = self._read()
        self.worker_pids = hello["pids"]

    def _read(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the DBOS bench process ended (see its stderr above)")
        return json.loads(line)

    def call(self, op: str, **arguments) -> dict:
        self.proc.stdin.write(json.dumps({"op": op, **arguments}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def pause(self):
        """SIGSTOP the DBOS workers (their queue polling included) while our side is measured."""
        self._signal(signal.SIGSTOP)

    def resume(self):
        self._signal(signal.SIGCONT)

    def _signal(self, signum):
        signal_each(self.worker_pids, signum)

    def stop(self):
        self.resume()
        try:
            self.call("quit")
            self.proc.wait(15)
        except (RuntimeError, OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def signal_each(ids, signum, send=os.kill) -> None:
    """Send ``signum`` to each pid (or, with ``send=os.killpg``, process group); one already
    gone is no error: a side of the bench stopped or continued as a whole."""
    for target in ids:
        try:
            send(target, signum)
        except ProcessLookupError:
            pass


def peer_url(ours: str) -> str:
    """The peer's own database on our server (BENCH_PEERS_DATABASE_URL overrides it)."""
    import dj_database_url

    if os.environ.get("BENCH_PEERS_DATABASE_URL"):
        return os.environ["BENCH_PEERS_DATABASE_URL"]
    db = dj_database_url.parse(ours)
    auth = db["USER"] or "postgres"
    if db["PASSWORD"]:
        auth += ":" + db["PASSWORD"]
    return f"postgresql://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/dbos_bench"
