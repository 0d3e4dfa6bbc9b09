"""Exit 0 if run RUN_ID is in STATUS (with RESULT, when given), else say why and exit 1.

``python -m hello.check_run RUN_ID STATUS [RESULT]``, from the project's directory
(``examples/run_example.sh`` runs it after each command).
"""

import os
import sys

import django


def main(run_id: str, status: str, result: str | None = None) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hello.settings")
    django.setup()
    from durable import selectors

    run = selectors.run_get(run_id)
    print(f"{run.id}: {run.status}, waiting for {run.waiting_for or '-'}, result {run.result!r}")
    if run.status != status or (result is not None and run.result != result):
        wanted = f"{status} with result {result!r}" if result is not None else status
        print(f"expected {run.id} to be {wanted}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
