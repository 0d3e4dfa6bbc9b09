"""A ledger client for the crash test: from the second post on, it hangs inside the step's
transaction, so a SIGKILL lands between two corrections with one uncommitted."""

import os
import time

from processes.reconciliation.clients import DatabaseLedger

_posted_here = 0


class SlowLedger(DatabaseLedger):
    def post(self, day, line, *, idempotency_key):
        global _posted_here
        posted = super().post(day, line, idempotency_key=idempotency_key)
        _posted_here += 1
        if _posted_here >= 2:
            time.sleep(float(os.environ.get("SLOW_LEDGER_SECONDS", "60")))
        return posted
