"""The import contracts in .importlinter hold: apps ask the engine, the channel knows no process."""
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_the_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout
