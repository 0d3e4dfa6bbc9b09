"""scripts/run_stack.py keeps web, workers and beat up, and leaves nothing behind on Ctrl-C."""

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.support import ROOT, subprocess_env
from tests.workers import free_port, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.embedded,
    pytest.mark.django_db(transaction=True),
]


def started(output_path, name: str) -> list[int]:
    return [
        int(pid)
        for pid in re.findall(rf"\[run\] started {name} \(pid (\d+)\)", output_path.read_text())
    ]


def alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_child_that_dies_is_started_again_and_ctrl_c_stops_everything(tmp_path):
    output = tmp_path / "run.log"
    with open(output, "wb") as log:
        stack = subprocess.Popen(
            [
                sys.executable,
                "scripts/run_stack.py",
                "--port",
                str(free_port()),
                "--concurrency",
                "1",
            ],
            cwd=ROOT,
            env=subprocess_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_until(
            lambda: (
                len(started(output, "worker")) == 1
                and started(output, "beat")
                and started(output, "llm-worker")
                and started(output, "sweep-worker")
            ),
            timeout=30,
            message="the stack to start",
        )
        first_worker = started(output, "worker")[0]

        os.killpg(first_worker, signal.SIGKILL)  # the worker dies (OOM killer, segfault)
        wait_until(lambda: len(started(output, "worker")) == 2, timeout=30, message="a new worker")

        assert stack.poll() is None, "the stack stopped when one child died"
        groups = [
            started(output, name)[-1]
            for name in ("web", "worker", "llm-worker", "sweep-worker", "beat")
        ]
    finally:
        stack.send_signal(signal.SIGINT)
        stack.wait(timeout=60)

    assert wait_until(
        lambda: not any(alive(group) for group in groups),
        timeout=15,
        message="every child to be gone",
    )
