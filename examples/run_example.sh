#!/usr/bin/env bash
# Build the engine's wheel, install it in a fresh virtualenv, and run examples/hello on it:
# migrate on SQLite, start a run (a step, then a wait for a signal), signal it, and check
# that it completed with the expected result. Only the wheel is on the path: the example is
# copied out of the repository first. Exits non-zero, saying why, when any of it fails.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
work="$(mktemp -d "${TMPDIR:-/tmp}/durable-example.XXXXXX")"
trap 'rm -rf "$work"' EXIT
log="$work/log"

# Runs a command quietly; on failure prints its output and what failed, and stops.
quiet() {
  local what="$1"; shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "run_example: FAILED: $what" >&2
    exit 1
  fi
}

echo "--- building the wheel (pyproject.toml + durable/ only)"
mkdir "$work/src"
tar -C "$repo" --exclude=__pycache__ -cf - pyproject.toml durable | tar -C "$work/src" -xf -
quiet "create the virtualenv" "$python" -m venv "$work/venv"
quiet "build the wheel" "$work/venv/bin/pip" wheel --no-deps --wheel-dir "$work/dist" "$work/src"
wheel="$(ls "$work"/dist/*.whl)"
echo "    $(basename "$wheel")"

echo "--- installing it into a fresh virtualenv"
quiet "install the wheel" "$work/venv/bin/pip" install "$wheel"

echo "--- the example project, outside the repository"
tar -C "$repo/examples" --exclude=__pycache__ --exclude=db.sqlite3 --exclude=var -cf - hello | tar -C "$work" -xf -
cd "$work/hello"
py="$work/venv/bin/python"
unset PYTHONPATH DJANGO_SETTINGS_MODULE
engine="$("$py" -c 'import durable; print(durable.__file__)')"
case "$engine" in
  "$work/venv/"*) echo "    durable from $engine" ;;
  *) echo "run_example: FAILED: durable imported from $engine, not the installed wheel" >&2; exit 1 ;;
esac

# The core alone: what follows must work without any extra's packages.
extras="$("$py" -c 'import importlib.util as u; print(*[m for m in ("celery", "rest_framework", "drf_spectacular", "prometheus_client") if u.find_spec(m)])')"
if [ -n "$extras" ]; then
  echo "run_example: FAILED: the core wheel pulled in an extra's packages: $extras" >&2
  exit 1
fi

set -x
"$py" manage.py check
"$py" manage.py migrate --noinput -v 0
"$py" manage.py durable start greeting Ada --id greeting:ada
"$py" -m hello.check_run greeting:ada waiting
"$py" manage.py durable signal greeting:ada approved --payload '{"reviewer": "Grace"}' --dedupe-key review-1
"$py" -m hello.check_run greeting:ada completed "Hello, Ada! (approved by Grace)"
{ set +x; } 2>/dev/null
echo "--- the example's run completed on the installed wheel (no Celery, no DRF installed)"
