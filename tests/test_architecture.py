"""The shape of the code: the engine in layers and the import contracts of .importlinter hold
(apps ask the engine, the channel knows no process), every module of the engine sits in a
layer, only the live store writes a run's rows, and every service that changes a run, a
case or a schedule says who did it."""

import ast
import configparser
import importlib
import inspect
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT


def test_the_import_contracts_are_kept():
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint_imports), "--config", str(ROOT / ".importlinter"), "--no-cache"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


SERVICE_MODULES = [
    "durable.services",
    "durable.features.schedules",
    "durable.features.bulk",
    "durable.features.archive",
    "approvals.services",
    "processes.onboarding.services",
    "processes.billing.services",
    "processes.reconciliation.services",
    "processes.whatsapp.services",
]


def _public_functions_with_an_actor():
    for module_name in SERVICE_MODULES:
        module = importlib.import_module(module_name)
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if (
                fn.__module__ == module_name
                and not name.startswith("_")
                and "actor" in inspect.signature(fn).parameters
            ):
                yield f"{module_name}.{name}", inspect.signature(fn).parameters["actor"]


def test_every_service_that_changes_a_run_a_case_or_a_schedule_requires_its_actor_by_name():
    services = dict(_public_functions_with_an_actor())
    optional = {
        name: str(parameter)
        for name, parameter in services.items()
        if parameter.kind is not inspect.Parameter.KEYWORD_ONLY
        or parameter.default is not inspect.Parameter.empty
    }

    assert {
        "durable.services.run_start",
        "durable.services.signal_send",
        "durable.services.run_cancel",
        "approvals.services.approval_decide",
        "durable.features.schedules.schedule_pause",
    } <= set(services)
    assert optional == {}


def test_a_run_started_without_an_actor_is_refused_before_anything_is_written(db):
    from durable import services
    from durable.selectors import run_exists

    with pytest.raises(TypeError, match="actor"):
        services.run_start("three_steps", 1, id="architecture:no-actor")

    assert not run_exists("architecture:no-actor")


RUN_ROWS = {"WorkflowRun", "JournalEntry", "Signal", "LimitTicket"}
WRITES = {
    "update",
    "delete",
    "create",
    "get_or_create",
    "update_or_create",
    "bulk_create",
    "bulk_update",
    "select_for_update",
}
# The live store holds every statement that changes a run's rows; the archive moves finished
# runs out of them (and deletes what it moved), under its own lock.
ALLOWED_WRITERS = {"durable/runtime/store/live.py"}


def _run_row_writes(path: Path):
    """(line, model, method) of every ``<Model>.objects....<write>(...)`` chain in ``path``."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in WRITES
        ):
            continue
        root = node.func.value
        while isinstance(root, (ast.Call, ast.Attribute, ast.Subscript)):
            if (
                isinstance(root, ast.Attribute)
                and root.attr in ("objects", "_base_manager")
                and isinstance(root.value, ast.Name)
                and root.value.id in RUN_ROWS
            ):
                yield node.lineno, root.value.id, node.func.attr
                break
            root = root.func if isinstance(root, ast.Call) else root.value


def test_only_the_live_store_writes_or_locks_a_runs_rows():
    sources = [
        path
        for package in ("durable", "approvals", "processes", "config")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    ]
    found = [
        f"{path.relative_to(ROOT)}:{line}: {model}.objects...{method}()"
        for path in sources
        if path.relative_to(ROOT).as_posix() not in ALLOWED_WRITERS
        for line, model, method in _run_row_writes(path)
    ]

    assert found == []


def test_the_check_of_run_row_writers_sees_a_chained_write(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "WorkflowRun.objects.filter(pk=1).exclude(status='x').update(wake_at=None)\n"
        "Signal.objects.select_for_update().filter(pk=2).first()\n"
        "Company.objects.filter(pk=3).update(name='n')\n"
    )

    assert list(_run_row_writes(sample)) == [
        (1, "WorkflowRun", "update"),
        (2, "Signal", "select_for_update"),
    ]


def _import_cycles(graph):
    """Every direct import a -> b where b also reaches a: each such edge closes a loop."""
    return sorted(
        f"{importer} -> {imported} -> ... -> {importer}"
        for importer in graph.modules
        for imported in graph.find_modules_directly_imported_by(importer)
        if graph.find_shortest_chain(importer=imported, imported=importer)
    )


def test_no_module_of_the_engine_or_the_apps_imports_itself_round_a_loop():
    import grimp

    graph = grimp.build_graph("durable", "approvals", "processes", "config", cache_dir=None)

    assert _import_cycles(graph) == []


def test_the_loop_check_sees_a_two_module_loop():
    import grimp

    graph = grimp.ImportGraph()
    for module in ("engine.a", "engine.b", "engine.c"):
        graph.add_module(module)
    graph.add_import(importer="engine.a", imported="engine.b")
    graph.add_import(importer="engine.b", imported="engine.a")
    graph.add_import(importer="engine.b", imported="engine.c")

    assert _import_cycles(graph) == [
        "engine.a -> engine.b -> ... -> engine.a",
        "engine.b -> engine.a -> ... -> engine.b",
    ]


def _engine_modules() -> list[str]:
    """Every module of durable/ but the package itself and its migrations."""
    modules = []
    for path in sorted((ROOT / "durable").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if "migrations" in parts or parts == ("durable", "__init__"):
            continue
        modules.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return modules


def _layered(contract: str) -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    lines = config[f"importlinter:contract:{contract}"]["layers"].split("\n")
    return [
        name.strip() for line in lines for name in line.replace("|", ":").split(":") if name.strip()
    ]


def test_every_module_of_the_engine_sits_in_a_layer_of_the_contract():
    layers = _layered("engine-layers")
    runtime = _layered("runtime-layers")

    outside = [
        module
        for module in _engine_modules()
        if not any(module == layer or module.startswith(layer + ".") for layer in layers)
    ]
    outside_runtime = [
        module
        for module in _engine_modules()
        if module.startswith("durable.runtime.")
        and not any(module == layer or module.startswith(layer + ".") for layer in runtime)
    ]

    assert outside == [] and outside_runtime == []


RUN_TABLES = (
    r"(durable_workflowrun|durable_journalentry|durable_signal|durable_limitticket|"
    r"WorkflowRun|JournalEntry|Signal|LimitTicket)\b"
)
RAW_WRITE = re.compile(r"(UPDATE|INSERT INTO|DELETE FROM)\s+[\"'{(]*(quote\()?" + RUN_TABLES)


def _raw_run_row_writes(path: Path):
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and RAW_WRITE.search(node.value)
        ):
            yield node.lineno
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value
                if isinstance(part, ast.Constant)
                else "{" + ast.unparse(part.value) + "}"
                for part in node.values
            )
            if RAW_WRITE.search(text):
                yield node.lineno


def test_only_the_live_store_writes_a_runs_rows_in_sql():
    sources = [
        path
        for package in ("durable", "approvals", "processes", "config")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts
    ]

    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources
        if path.relative_to(ROOT).as_posix() not in ALLOWED_WRITERS
        for line in _raw_run_row_writes(path)
    ]

    assert found == []


def test_the_check_of_raw_sql_sees_a_write_on_a_run_table(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'cursor.execute(f"UPDATE {WorkflowRun._meta.db_table} SET wake_at = %s", [now])\n'
        'cursor.execute("DELETE FROM durable_signal WHERE run_id = %s", [1])\n'
        'cursor.execute("SELECT id FROM durable_workflowrun")\n'
    )

    assert list(_raw_run_row_writes(sample)) == [1, 2]


# Imports inside a function: each says why it cannot be at the top of its module. Anything
# else would be an import hiding a loop or a step up a layer from the contracts.
FUNCTION_LEVEL_IMPORTS = {
    "durable/apps.py": (
        "ready() runs once the models are loaded: Django's place to import what needs them"
    ),
}


def test_no_module_of_the_engine_imports_inside_a_function_but_where_it_says_why():
    found = set()
    for path in (ROOT / "durable").rglob("*.py"):
        if "migrations" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if (
                        isinstance(inner, ast.ImportFrom)
                        and (inner.module or "").startswith("durable")
                        or isinstance(inner, ast.Import)
                        and any(a.name.startswith("durable") for a in inner.names)
                    ):
                        found.add(path.relative_to(ROOT).as_posix())

    assert found == set(FUNCTION_LEVEL_IMPORTS)
