"""SIGKILL of workers at seeded random moments across 100 runs."""
import time

import pytest

from tests.faults.harness import SignalSender, check_guarantees, report, start_runs, wait_for_all

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_every_run_completes_once_through_random_worker_kills(celery_processes, rng):
    celery = celery_processes
    celery.start_worker("w0")
    celery.start_worker("w1")
    celery.start_beat()
    run_ids = start_runs(100)
    sender = SignalSender(run_ids, rng, spread=20)
    sender.start()
    kills = 0
    next_kill = time.monotonic() + rng.uniform(0.5, 2.0)

    def chaos():
        nonlocal kills, next_kill
        if time.monotonic() < next_kill or kills >= 8:
            return
        victim = rng.choice([name for name in celery.procs if name.startswith("w")])
        celery.kill(victim)
        celery.start_worker(f"w{kills + 2}")
        kills += 1
        # Far enough apart that a step re-run after one kill is recorded before the next
        # (lease 2 s + sweep 0.5 s + the step), so an external effect runs at most twice.
        next_kill = time.monotonic() + rng.uniform(3.5, 5.0)

    wait_for_all(run_ids, timeout=240, chaos=chaos)
    sender.join(timeout=60)

    assert sender.error is None
    totals = check_guarantees(run_ids)
    totals["kills"] = kills
    report("worker SIGKILLs", totals)
    assert kills >= 3, "the runs finished before the chaos could happen: the test proved nothing"
