"""Debian's promtool, for the tests of what deploy/ ships to Prometheus and Grafana."""

import shutil
import subprocess
from pathlib import Path

import pytest

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None, reason="promtool comes with Debian's prometheus package (.ci/run installs it)"
)


def promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``promtool <args>`` in ``cwd``; the caller asserts on the exit code and the output."""
    return subprocess.run(
        [PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
