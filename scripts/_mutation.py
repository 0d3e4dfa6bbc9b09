"""Driver of scripts/mutation: mutmut over the engine modules, then a score per module.

mutmut works in a copy of the tree under var/mutation/ (its mutants/ folder and setup.cfg
live there, never in the worktree), so a run leaves `git status` clean and keeps its
results between runs: a second full run only tests what changed.
"""

import argparse
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "var" / "mutation"

# The modules that hold positions, matching, retries, deadlines, signal order, fencing and
# atomic writes (the runtime), and the services, limits, children and schedules built on
# them. The one list to change when the engine's core moves.
MODULES = [
    "durable/runtime/context.py",
    "durable/runtime/store/live.py",
    "durable/runtime/heartbeat.py",
    "durable/runtime/executor.py",
    "durable/services.py",
    "durable/runtime/limits.py",
    "durable/runtime/children.py",
    "durable/features/schedules.py",
]
# The engine's fast tests, run by mutmut against every mutant (on SQLite: the fastest).
TEST_PATHS = ["tests/durable"]
TEST_MARKERS = "not slow"
# Copied beside the mutated package so the tests import and configure as usual.
# mutmut copies only the Python files of durable/: its templates come as they are.
ALSO_COPY = [
    "config",
    "processes",
    "approvals",
    "templates",
    "locale",
    "durable/templates",
    "manage.py",
    "pytest.ini",
]
# One mutant at a time: the test database is a file (var/test_db.sqlite3, shared with worker
# subprocesses), so two mutmut children would create and drop it under each other and
# kill mutants that changed nothing. One child also keeps the shared machine usable.
CHILDREN = 1
EQUIVALENT_LIST = (
    ROOT / "docs" / "mutation-equivalents.md"
)  # lines "- `mutant name`: why it is equivalent"

KILLED = {"killed", "timeout", "caught by type check", "segfault"}


def tracked_files() -> list[str]:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        )
        .stdout.decode()
        .split("\0")
    )
    return [name for name in listed if name and (ROOT / name).is_file()]


def sync_work_copy() -> None:
    """Mirror the worktree's files into WORK (mtimes kept, so mutmut sees what changed)."""
    WORK.mkdir(parents=True, exist_ok=True)
    wanted = set(tracked_files())
    for name in wanted:
        source, target = ROOT / name, WORK / name
        stat = source.stat()
        if (
            target.exists()
            and target.stat().st_mtime == stat.st_mtime
            and target.stat().st_size == stat.st_size
        ):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    for path in WORK.rglob("*"):
        relative = path.relative_to(WORK).as_posix()
        if relative.split("/")[0] in ("mutants", "setup.cfg", "var") or not path.is_file():
            continue
        if relative not in wanted and "__pycache__" not in relative:
            path.unlink()
    for (
        module
    ) in MODULES:  # newly listed: its plain copy from an earlier run would never be mutated
        copy = WORK / "mutants" / module
        if copy.exists() and not copy.with_name(copy.name + ".meta").exists():
            copy.unlink()
    (WORK / "setup.cfg").write_text(
        "\n".join(
            [
                "[mutmut]",
                "source_paths = durable",
                "only_mutate =",
                *(f"    {m}" for m in MODULES),
                "also_copy =",
                *(f"    {p}" for p in ALSO_COPY),
                "pytest_add_cli_args_test_selection =",
                *(f"    {p}" for p in TEST_PATHS),
                # -s: Django configures logging once per process, inside the first pytest session;
                # with capture on, its console handler keeps that session's (later closed) stream
                # and a logging test fails in every later session, killing mutants that changed
                # nothing. --reuse-db: one child at a time, so the test database is migrated once,
                # not per mutant.
                "pytest_add_cli_args =",
                "    -m",
                f"    {TEST_MARKERS}",
                "    -p",
                "    no:cacheprovider",
                "    -s",
                "    --reuse-db",
                # Each mutant's tests run in a process forked from a server that has collected the
                # tests but never opened a database: forking mutmut's own process, which has run the
                # suite, hands every child the parent's SQLite handle ("disk I/O error", lost
                # tables).
                "process_isolation = forkserver",
                "use_git_change_detection = false",
                "",
            ]
        )
    )


def mutmut_env(database_url: str | None = None) -> dict:
    """SQLite and the filesystem broker (fast), or ``database_url``: the PostgreSQL-only
    statements (the one-statement fenced insert, the heartbeat's SKIP LOCKED, the idle
    limit of an atomic step) are reached only there."""
    env = dict(os.environ)
    for name in ("DATABASE_URL", "CELERY_BROKER_URL"):
        env.pop(name, None)
    if database_url:
        env["DATABASE_URL"] = database_url
    env["DURABLE_VAR_DIR"] = str(WORK / "var")
    return env


_LIST_MUTANTS = """
import json
from mutmut.__main__ import create_mutants
from mutmut.mutation.data import SourceFileMutationData
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths, \
walk_mutatable_files
import os
os.makedirs("mutants", exist_ok=True)
copy_src_dir(); copy_also_copy_files(); setup_source_paths(); create_mutants(1)
names = []
for path in walk_mutatable_files():
    data = SourceFileMutationData(path=path)
    data.load()
    names.extend(data.exit_code_by_key)
print(json.dumps(sorted(names)))
"""


@contextmanager
def stats_of(backend: str):
    """mutmut's record of which tests reach which function, kept per database backend.

    mutmut runs a mutant only against the tests that reached its function when it collected
    its stats, and never runs one that no test reached ("no tests"). Collected on SQLite,
    that record says no test reaches the PostgreSQL-only code (the one-statement fenced
    insert, a lost connection's retry): a PostgreSQL pass reading it would report those
    mutants "no tests" without running a test. So a PostgreSQL pass uses stats collected on
    PostgreSQL (the first such pass collects them), and the SQLite record is put back after.
    """
    current = WORK / "mutants" / "mutmut-stats.json"
    if backend == "sqlite":
        yield
        return
    kept = {name: WORK / "mutants" / f"mutmut-stats.{name}.json" for name in ("sqlite", backend)}
    if current.exists():
        current.replace(kept["sqlite"])
    if kept[backend].exists():
        kept[backend].replace(current)
    try:
        yield
    finally:
        if current.exists():
            current.replace(kept[backend])
        if kept["sqlite"].exists():
            kept["sqlite"].replace(current)


def all_mutant_names() -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _LIST_MUTANTS],
        cwd=WORK,
        env=mutmut_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def results() -> dict[str, str]:
    from mutmut.stats import status_by_exit_code

    statuses = {}
    for module in MODULES:
        meta = WORK / "mutants" / f"{module}.meta"
        if meta.exists():
            for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
                statuses[name] = status_by_exit_code[code]
    return statuses


def equivalent_mutants() -> set[str]:
    if not EQUIVALENT_LIST.exists():
        return set()
    return set(re.findall(r"^- `([^`]+__mutmut_\d+)`", EQUIVALENT_LIST.read_text(), re.MULTILINE))


def module_of(name: str) -> str:
    """durable.runtime.context.xǁReplayContextǁstep__mutmut_3 -> durable/runtime/context.py
    (mutmut's naming)."""
    return re.match(r"(.*?)\.x(?:_|\u01c1)", name).group(1).replace(".", "/") + ".py"


def diff_of(names: list[str]) -> dict[str, str]:
    script = (
        "import json,sys\nfrom mutmut.mutation.diff_apply import get_diff_for_mutant\n"
        "print(json.dumps({n: get_diff_for_mutant(n) for n in json.loads(sys.argv[1])}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, json.dumps(names)],
        cwd=WORK,
        env=mutmut_env(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def changed_lines(diff: str) -> str:
    lines = [
        line
        for line in diff.splitlines()
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]
    return " | ".join(line.strip() for line in lines)[:300]


def report(
    names: list[str], statuses: dict[str, str], min_score: float | None, show_diffs: bool
) -> int:
    equivalent = equivalent_mutants()
    print(f"\n{'module':<24}{'mutants':>8}{'killed':>8}{'survived':>9}{'equiv.':>7}{'score':>8}")
    totals = [0, 0, 0, 0]
    survivors = []
    for module in MODULES:
        mine = [n for n in names if module_of(n) == module]
        mine = [n for n in mine if statuses.get(n, "not checked") != "not checked"]
        killed = [n for n in mine if statuses.get(n) in KILLED]
        equiv = [n for n in mine if n in equivalent and n not in killed]
        alive = [n for n in mine if n not in killed and n not in equiv]
        survivors += alive
        counted = len(mine) - len(equiv)
        score = 100.0 * len(killed) / counted if counted else 100.0
        totals = [
            totals[0] + len(mine),
            totals[1] + len(killed),
            totals[2] + len(alive),
            totals[3] + len(equiv),
        ]
        print(
            f"{module:<24}{len(mine):>8}{len(killed):>8}{len(alive):>9}{len(equiv):>7}{score:>7.1f}%"
        )
    counted = totals[0] - totals[3]
    score = 100.0 * totals[1] / counted if counted else 100.0
    print(f"{'all':<24}{totals[0]:>8}{totals[1]:>8}{totals[2]:>9}{totals[3]:>7}{score:>7.1f}%")
    unchecked = [n for n in names if statuses.get(n, "not checked") == "not checked"]
    print(
        "(score: killed / (mutants - equivalent); equivalent "
        "mutants are listed in docs/mutation-equivalents.md)"
    )
    if unchecked:
        print(f"({len(unchecked)} selected mutants not checked yet: not counted)")
    if survivors:
        print(f"\nsurviving mutants ({len(survivors)}):")
        diffs = diff_of(survivors)
        for name in survivors:
            print(f"  {name} [{statuses.get(name)}]: {changed_lines(diffs[name])}")
            if show_diffs:
                print("\n".join("      " + line for line in diffs[name].splitlines()))
    if min_score is not None and score < min_score:
        print(f"\nFAIL: mutation score {score:.1f}% is below the threshold {min_score:.1f}%")
        return 1
    return 0


def draw(names: list[str], count: int, seed: int) -> list[str]:
    """The ``count`` mutants whose names hash lowest under ``seed``. A mutant's place in the
    sample depends on its name only: a change elsewhere in the modules leaves the sample as it
    was, where ``random.sample`` over the list drew a different hundred whenever the number of
    mutants changed. Only the changed functions' mutants (mutmut renumbers them) come anew."""

    def rank(name: str) -> str:
        return hashlib.sha256(f"{seed}:{name}".encode()).hexdigest()

    return sorted(sorted(names, key=rank)[:count])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--sample", type=int, help="test only N mutants, drawn by name (fixed by --seed; see draw)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--min-score", type=float, help="exit 1 when the score falls below this percentage"
    )
    parser.add_argument(
        "--rerun",
        action="store_true",
        help="test again the mutants that survived last time (after adding tests)",
    )
    parser.add_argument("--fresh", action="store_true", help="forget all earlier results")
    parser.add_argument("--diffs", action="store_true", help="print each surviving mutant's diff")
    parser.add_argument("--report", action="store_true", help="only print the last results")
    parser.add_argument(
        "--only", help="only the mutants whose names match this glob (e.g. '*insert*')"
    )
    parser.add_argument(
        "--postgres",
        metavar="DATABASE_URL",
        help="test on this PostgreSQL database instead of SQLite (with --rerun: the "
        "survivors of a SQLite pass, some of which only PostgreSQL reaches)",
    )
    args = parser.parse_args()

    if args.fresh:  # the results, and the test database a killed run may have left rows in
        for stale in (WORK / "mutants", WORK / "var"):
            if stale.exists():
                shutil.rmtree(stale)
    sync_work_copy()
    names = all_mutant_names()
    if args.only:
        names = [n for n in names if fnmatch.fnmatch(n, args.only)]
    if args.sample:
        names = draw(names, args.sample, args.seed)
    if not args.report:
        statuses = results()
        if args.rerun:
            selected = [n for n in names if statuses.get(n) not in KILLED]
        elif args.sample or args.only:  # a name given to mutmut is always retested: skip known ones
            selected = [n for n in names if statuses.get(n, "not checked") == "not checked"]
        else:
            selected = None  # mutmut's own incremental run over everything
        if selected != []:
            command = ["mutmut", "run", "--max-children", str(CHILDREN), *(selected or [])]
            shown = f"<{len(selected)} mutants>" if selected else ""
            print(f"$ {' '.join(command[:4])} {shown}  (in {WORK})", flush=True)
            with stats_of("postgresql" if args.postgres else "sqlite"):
                done = subprocess.run(
                    [str(Path(sys.executable).parent / "mutmut"), *command[1:]],
                    cwd=WORK,
                    env=mutmut_env(args.postgres),
                )
            if done.returncode != 0:
                print(f"mutmut exited {done.returncode}")
                return done.returncode
    return report(names, results(), args.min_score, args.diffs)


if __name__ == "__main__":
    sys.exit(main())
