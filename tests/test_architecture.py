"""The shape the engine-layers issue asks for: the import contracts in .importlinter hold
(apps ask the engine, the channel knows no process), and every service that changes a run,
a case or a schedule says who did it."""
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


def test_the_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--config", str(ROOT / ".importlinter"), "--no-cache"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


SERVICE_MODULES = ["durable.services", "durable.schedules", "durable.bulk", "durable.archive", "approvals.services",
                   "processes.onboarding.services", "processes.billing.services",
                   "processes.reconciliation.services", "processes.whatsapp.services"]


def _public_functions_with_an_actor():
    for module_name in SERVICE_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module_name and not name.startswith("_") \
                    and "actor" in inspect.signature(fn).parameters:
                yield f"{module_name}.{name}", inspect.signature(fn).parameters["actor"]


def test_every_service_that_changes_a_run_a_case_or_a_schedule_requires_its_actor_by_name():
    services = dict(_public_functions_with_an_actor())
    optional = {name: str(parameter) for name, parameter in services.items()
                if parameter.kind is not inspect.Parameter.KEYWORD_ONLY or parameter.default is not inspect.Parameter.empty}

    assert {"durable.services.run_start", "durable.services.signal_send", "durable.services.run_cancel",
            "approvals.services.approval_decide", "durable.schedules.schedule_pause"} <= set(services)
    assert optional == {}


def test_a_run_started_without_an_actor_is_refused_before_anything_is_written(db):
    from durable import services
    from durable.selectors import run_exists

    with pytest.raises(TypeError, match="actor"):
        services.run_start("three_steps", 1, id="architecture:no-actor")

    assert not run_exists("architecture:no-actor")
