"""SIGKILL of workers at seeded random moments across 100 runs."""

import time

import pytest

from tests.faults.harness import settle, start_chaos, wait_for_all

pytestmark = [pytest.mark.slow, pytest.mark.integration, pytest.mark.django_db(transaction=True)]


def test_every_run_completes_once_through_random_worker_kills(celery_processes, rng):
    celery = celery_processes
    run_ids, sender = start_chaos(celery, rng, runs=100, spread=20)
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

    settle(run_ids, sender, "worker SIGKILLs", kills=kills)
    assert kills >= 3, "the runs finished before the chaos could happen: the test proved nothing"
