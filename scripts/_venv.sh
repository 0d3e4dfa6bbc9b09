# Sourced by the scripts: create .venv and install a requirements file once (again whenever
# it changes). scripts/run installs the app's requirements.txt; scripts/test, bench and
# mutation pass requirements-dev.txt, which includes it. pip's output goes to
# .venv/install.log and is shown only if the install fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
# The file is named by the caller, always: a sourced script sees its caller's arguments as
# its own when given none, and those are pytest's or the bench's, not a file.
REQUIREMENTS=${1:?usage: source scripts/_venv.sh requirements.txt|requirements-dev.txt}
case "$REQUIREMENTS" in
  requirements.txt|requirements-dev.txt) ;;
  *) echo "scripts/_venv.sh: no such requirements file: $REQUIREMENTS" >&2; exit 2 ;;
esac
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
# What is installed, by the hash of the files it came from: requirements-dev.txt includes
# requirements.txt (-r), so its stamp covers both, and a change to either reinstalls it.
stamp() { cat requirements.txt "$1" | sha256sum | cut -d' ' -f1; }
installed() { [ "$(cat ".venv/.$1.sha256" 2>/dev/null)" = "$(stamp "$1")" ]; }
if ! installed "$REQUIREMENTS" && ! installed requirements-dev.txt; then
  echo "[setup] installing $REQUIREMENTS into .venv (once; pip's log: .venv/install.log)" >&2
  if ! {
    .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip \
      && .venv/bin/python -m pip install --disable-pip-version-check -r "$REQUIREMENTS"
  } > .venv/install.log 2>&1; then
    cat .venv/install.log >&2
    echo "[setup] installing $REQUIREMENTS failed (above; also in .venv/install.log)" >&2
    exit 1
  fi
  stamp "$REQUIREMENTS" > ".venv/.$REQUIREMENTS.sha256"
fi
