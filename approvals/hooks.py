"""Signals approvals sends to the processes that open cases (approvals never imports a process)."""

from django.dispatch import Signal

# Sent in the transaction that opened a case, with ``case`` (the new ApprovalRequest): a
# process whose data may have changed since its workflow read it re-checks the case here
# (approval_recheck), so even a case opened on stale facts shows what is true now.
case_opened = Signal()
