"""Django signals other apps connect to, so durable/ never imports them.

Named hooks, not signals, so they are not mistaken for a workflow's signals.
"""

from django.dispatch import Signal

# Sent inside run_cancel's transaction (receivers' writes commit or roll back with it):
# run_id, reason, actor.
run_cancelled = Signal()
