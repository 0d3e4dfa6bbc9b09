"""Celery entry points of the processes, thin: compute the argument, call a service."""
from datetime import timedelta

from celery import shared_task

from durable import clock
from processes.reconciliation.services import reconciliation_start


@shared_task(name="processes.reconcile_yesterday", ignore_result=True)
def reconcile_yesterday() -> str:
    """Started daily by beat; the run id ``reconcile:<date>`` makes a repeat harmless."""
    batch = reconciliation_start(batch_date=(clock.now() - timedelta(days=1)).date(), actor="beat")
    return batch.run_id


@shared_task(name="processes.route_stale_inbound", ignore_result=True)
def route_stale_inbound() -> int:
    """Beat: inbound WhatsApp messages stored but never routed get routed now."""
    from processes.whatsapp.services import inbound_route_stale

    return inbound_route_stale()
