"""Reads of the WhatsApp channel."""
from datetime import datetime

from django.db.models import Max, Q, QuerySet

from processes.whatsapp.models import InboundMessage, InboundStatus


def last_inbound_at(*, wa_id: str = "", user_id: str = "") -> datetime | None:
    """When the customer last wrote to us: it opens the 24-hour free-text window."""
    query = Q()
    if wa_id:
        query |= Q(sender_wa_id=wa_id)
    if user_id:
        query |= Q(sender_user_id=user_id)
    if not query:
        return None
    return InboundMessage.objects.filter(query).aggregate(last=Max("received_at"))["last"]


def inbound_needing_attention() -> QuerySet:
    """Messages no workflow took: unmatched, unsupported or failed."""
    return InboundMessage.objects.filter(status__in=[
        InboundStatus.UNMATCHED, InboundStatus.UNSUPPORTED, InboundStatus.FAILED])
