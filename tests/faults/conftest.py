import os
import random

import pytest

from tests.faults.harness import FAULT_TIMINGS
from tests.workers import celery_processes as running_celery

SEED = int(os.environ.get("FAULT_SEED", "20261130"))


@pytest.fixture
def rng():
    print(f"\n[faults] seed {SEED} (set FAULT_SEED to replay another schedule)")
    return random.Random(SEED)


@pytest.fixture
def chaos_settings(settings):
    """The test process only writes rows; beat's sweep dispatches everything it starts."""
    settings.DURABLE_DISPATCHER = "none"
    settings.DURABLE_DISPATCH_GRACE_SECONDS = 0.3
    return settings


@pytest.fixture
def celery_processes(tmp_path, chaos_settings):
    with running_celery(
        tmp_path,
        **FAULT_TIMINGS,
    ) as processes:
        yield processes
