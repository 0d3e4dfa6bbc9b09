"""Reads of the WhatsApp channel."""
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Max, Q, QuerySet
from django.utils.translation import gettext_lazy as _

from processes.whatsapp.models import InboundMessage, InboundStatus, OutboundMessage, OutboundStatus


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


# What a message that is not text was, in the reader's language.
KIND_LABELS = {"document": _("document"), "image": _("image"), "audio": _("audio"), "video": _("video"),
               "sticker": _("sticker"), "location": _("location"), "contacts": _("contact card"),
               "reaction": _("reaction"), "system": _("notice from WhatsApp"),
               "interactive": _("chose"), "button": _("chose")}


@dataclass
class ConversationLine:
    """One message of a conversation, either way, as a reviewer reads it. ``kind`` is the
    WhatsApp message type ("text", "document", ...); ``text`` the body, a file's name and
    caption, or the title of the option chosen; ``options`` the titles our message offered."""

    at: datetime
    inbound: bool
    text: str
    status: str
    kind: str = "text"
    options: list[str] = field(default_factory=list)

    @property
    def kind_label(self) -> str:
        return "" if self.kind == "text" else str(KIND_LABELS.get(self.kind, self.kind))

    @property
    def status_label(self) -> str:
        return str(OutboundStatus(self.status).label) if self.status in OutboundStatus.values else self.status


def _inbound_text(message: InboundMessage) -> str:
    body = (message.payload or {}).get("message") or {}
    content = body.get(message.message_type)
    if message.message_type in ("text", "system") and isinstance(content, dict):
        return str(content.get("body") or "")
    if message.message_type == "button" and isinstance(content, dict):
        return str(content.get("text") or "")
    if message.message_type == "interactive" and isinstance(content, dict):
        chosen = content.get(str(content.get("type") or ""))
        return str(chosen.get("title") or "") if isinstance(chosen, dict) else ""
    if isinstance(content, dict):
        label = content.get("filename") or content.get("caption") or ""
        caption = content.get("caption") if content.get("filename") else ""
        return f"{label}" + (f" — {caption}" if caption else "")
    return ""


def conversation_for(company) -> list[ConversationLine]:
    """A company's WhatsApp conversation, inbound and outbound, oldest first.

    At the same instant the customer's message comes before our reply to it.
    """
    lines = [(m.received_at, 0, m.pk, ConversationLine(m.received_at, True, _inbound_text(m), m.status,
                                                        m.message_type))
             for m in InboundMessage.objects.filter(company=company)]
    lines += [(m.created_at, 1, m.pk, ConversationLine(m.created_at, False, m.body, m.status, options=[
                  item["title"] for item in (m.options or {}).get("items") or []]))
              for m in OutboundMessage.objects.filter(company=company)]
    return [line for *_, line in sorted(lines, key=lambda item: item[:3])]
