"""The DBOS side of ./scripts/bench --peers; runs only in the peers' virtualenv, never in ours.

    python benchmarks/peers/dbos_bench.py --database-url postgresql://... --workers 2

starts W worker processes (each launches DBOS and consumes the queue "bench"), then reads
one JSON command a line on stdin and answers one JSON line on stdout per command:

    {"op": "direct", "runs": 500, "steps": 3}  -> {"seconds": ...}   W processes call the workflow
    {"op": "reset"}                            -> null               empty tables, before a trial
    {"op": "enqueue", "runs": 500, "steps": 3} -> {"prefix": ...}    enqueued here (our side
                                                                     has stopped the workers)
    {"op": "done", "prefix": "queue-..."}      -> {"done": N}        how many have completed
    {"op": "per_step", "steps": 1000}          -> {"ms_per_step": ...}
    {"op": "signal", "samples": 50}            -> {"resume_ms": [...], "send_ms": [...]}
    {"op": "quit"}

The driver here never launches DBOS (it would consume the queue too): it enqueues and
sends through DBOSClient, as a web process would, and reads completion from the
workflow_status table, polling every 20 ms as our side does.
"""

import argparse
import json
import multiprocessing
import os
import sys
import time

QUEUE = "bench"
# DBOS's default queue polling interval is 1 s; a worker fetches new work at most once per
# interval, so that default would measure the interval, not DBOS.
QUEUE_POLLING_S = float(os.environ.get("BENCH_DBOS_QUEUE_POLLING_S", "0.05"))
# Workflows one worker process runs at once from the queue (DBOS runs them in threads).
QUEUE_WORKER_CONCURRENCY = 4


def _import_dbos():
    from dbos import DBOS

    @DBOS.step()
    def noop(i: int) -> int:
        return i

    @DBOS.step()
    def now() -> float:
        return time.time()

    @DBOS.workflow(name="bench_steps")
    def bench_steps(k: int) -> int:
        for i in range(k):
            noop(i)
        return k

    @DBOS.workflow(name="bench_signal")
    def bench_signal() -> float:
        DBOS.recv("go", timeout_seconds=120)
        return now()

    return DBOS, bench_steps, bench_signal


def worker(url: str, index: int, conn) -> None:
    """One worker process: launches DBOS (and so consumes the queue), then obeys the driver."""
    DBOS, bench_steps, bench_signal = _import_dbos()
    from dbos import SetWorkflowID

    DBOS(
        config={
            "name": "bench",
            "system_database_url": url,
            "log_level": "WARNING",
            "executor_id": f"bench-worker-{index}",
            "run_admin_server": False,
        }
    )
    DBOS.launch()
    DBOS.register_queue(
        QUEUE, worker_concurrency=QUEUE_WORKER_CONCURRENCY, polling_interval_sec=QUEUE_POLLING_S
    )
    conn.send("ready")
    while True:
        op, arg = conn.recv()
        if op == "direct":
            prefix, runs, steps = arg
            for i in range(runs):
                with SetWorkflowID(f"{prefix}:{index}:{i}"):
                    bench_steps(steps)
            conn.send(None)
        elif op == "per_step":
            steps = arg
            t0 = time.perf_counter()
            bench_steps(0)
            t_empty = time.perf_counter() - t0
            t0 = time.perf_counter()
            bench_steps(steps)
            t_many = time.perf_counter() - t0
            conn.send((t_many - t_empty) / steps * 1000)
        elif op == "signal_start":
            for workflow_id in arg:
                with SetWorkflowID(workflow_id):
                    DBOS.start_workflow(bench_signal)
            conn.send(None)
        elif op == "quit":
            DBOS.destroy()
            conn.send(None)
            return


class Driver:
    def __init__(self, url: str, workers: int):
        import psycopg
        import sqlalchemy

        self.url = url
        ctx = multiprocessing.get_context("spawn")
        self.pipes, self.procs = [], []
        for index in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker, args=(url, index, child), daemon=True)
            proc.start()
            self.pipes.append(parent)
            self.procs.append(proc)
        for pipe in self.pipes:
            if pipe.recv() != "ready":
                raise RuntimeError("a DBOS worker did not start")
        from dbos import DBOSClient

        self.client = DBOSClient(system_database_url=url)
        sa_url = sqlalchemy.engine.make_url(url)
        self.db = psycopg.connect(
            host=sa_url.host,
            port=sa_url.port or 5432,
            user=sa_url.username,
            password=sa_url.password,
            dbname=sa_url.database,
            autocommit=True,
        )
        self.trial = 0

    def _prefix(self, name: str) -> str:
        self.trial += 1
        return f"{name}-{os.getpid()}-{self.trial}"

    def _done(self, prefix: str) -> int:
        return self.db.execute(
            "SELECT count(*) FROM dbos.workflow_status WHERE workflow_uuid LIKE %s "
            "AND status = 'SUCCESS'",
            [prefix + ":%"],
        ).fetchone()[0]

    def _wait(self, prefix: str, count: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while self._done(prefix) < count:
            if time.monotonic() > deadline:
                raise RuntimeError("DBOS workflows did not finish")
            time.sleep(0.02)

    def reset(self) -> None:
        """Each trial starts from empty tables, as ours does (TRUNCATE)."""
        self.db.execute("TRUNCATE dbos.workflow_status CASCADE")

    def direct(self, runs: int, steps: int) -> dict:
        self.reset()
        prefix = self._prefix("direct")
        shares = [
            runs // len(self.pipes) + (1 if i < runs % len(self.pipes) else 0)
            for i in range(len(self.pipes))
        ]
        started = time.perf_counter()
        for pipe, share in zip(self.pipes, shares):
            pipe.send(("direct", (prefix, share, steps)))
        for pipe in self.pipes:
            pipe.recv()
        return {"seconds": time.perf_counter() - started}

    def enqueue(self, runs: int, steps: int) -> dict:
        """Fill the queue; the W workers run it once our side continues them (run.py's filled)."""
        prefix = self._prefix("queue")
        for i in range(runs):
            self.client.enqueue(
                {
                    "workflow_name": "bench_steps",
                    "queue_name": QUEUE,
                    "workflow_id": f"{prefix}:{i}",
                },
                steps,
            )
        return {"prefix": prefix}

    def done(self, prefix: str) -> dict:
        return {"done": self._done(prefix)}

    def per_step(self, steps: int) -> dict:
        self.reset()
        self.pipes[0].send(("per_step", steps))
        return {"ms_per_step": self.pipes[0].recv()}

    def signal(self, samples: int) -> dict:
        """From the moment send() has returned to the moment the workflow's step after recv()
        runs; the waiting workflows are started (in threads) in worker 0 beforehand."""
        self.reset()
        prefix = self._prefix("signal")
        ids = [f"{prefix}:{i}" for i in range(samples)]
        self.pipes[0].send(("signal_start", ids))
        self.pipes[0].recv()
        time.sleep(1.0 + samples * 0.005)  # every workflow is parked in recv()
        sent, send_ms = {}, []
        for workflow_id in ids:
            t0 = time.perf_counter()
            self.client.send(workflow_id, {"n": 1}, topic="go")
            send_ms.append((time.perf_counter() - t0) * 1000)
            sent[workflow_id] = time.time()
            time.sleep(0.02)
        self._wait(prefix, samples)
        resumed = {w: self.client.retrieve_workflow(w).get_result() for w in ids}
        return {"resume_ms": [(resumed[w] - sent[w]) * 1000 for w in ids], "send_ms": send_ms}

    def quit(self) -> None:
        for pipe in self.pipes:
            pipe.send(("quit", None))
        for pipe, proc in zip(self.pipes, self.procs):
            try:
                pipe.recv()
            except EOFError:
                pass
            proc.join(10)
        self.client.destroy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--workers", type=int, default=2)
    options = parser.parse_args()
    driver = Driver(options.database_url, options.workers)
    print(
        json.dumps(
            {"ready": True, "workers": options.workers, "pids": [p.pid for p in driver.procs]}
        ),
        flush=True,
    )
    for line in sys.stdin:
        command = json.loads(line)
        op = command.pop("op")
        if op == "quit":
            driver.quit()
            print(json.dumps({"ok": True}), flush=True)
            return
        print(json.dumps(getattr(driver, op)(**command)), flush=True)


if __name__ == "__main__":
    main()
