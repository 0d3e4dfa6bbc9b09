"""Celery entry points of the processes, thin: compute the argument, call a service.

Daily reconciliation is not here: a durable schedule starts it (processes migration 0006).
"""

from celery import shared_task

from processes.whatsapp.services import inbound_route_stale, intake_drain


@shared_task(name="processes.intake", ignore_result=True)
def intake() -> int:
    """Process the WhatsApp deliveries the webhook stored, oldest first."""
    return intake_drain()


@shared_task(name="processes.route_stale_inbound", ignore_result=True)
def route_stale_inbound() -> int:
    """Beat's safety net: deliveries whose intake task was lost, and messages stored but
    never routed, are processed now."""
    return intake_drain() + inbound_route_stale()
