"""Celery entry points of the processes, thin: compute the argument, call a service.

Daily reconciliation is not here: a durable schedule starts it (processes migration 0006).
"""
from celery import shared_task


@shared_task(name="processes.route_stale_inbound", ignore_result=True)
def route_stale_inbound() -> int:
    """Beat: inbound WhatsApp messages stored but never routed get routed now."""
    from processes.whatsapp.services import inbound_route_stale

    return inbound_route_stale()
