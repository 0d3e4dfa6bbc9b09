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
               "interactive": _("chose"), "button": _("chose"),
               "edit": _("edit of a message not shown here"), "revoke": _("deletion of a message not shown here")}
# A customer's change to a message already sent: it names the message it changes.
CHANGE_TYPES = ("edit", "revoke")


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
    # What the customer changed later: each edit's new text (or caption), and whether they
    # deleted the message. The line keeps the text as first received.
    edits: list[str] = field(default_factory=list)
    deleted: bool = False

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


def changed_message_id(message: InboundMessage) -> str:
    """The id of the message an ``edit`` or ``revoke`` names ("" for any other message)."""
    change = ((message.payload or {}).get("message") or {}).get(message.message_type)
    if message.message_type not in CHANGE_TYPES or not isinstance(change, dict):
        return ""
    return str(change.get("original_message_id") or "")


def edit_text(message: InboundMessage) -> str:
    """An edit's new text: the body of a text, the caption of a document or an image."""
    edit = ((message.payload or {}).get("message") or {}).get("edit")
    edited = edit.get("message") if isinstance(edit, dict) else None
    kind = edited.get("type") if isinstance(edited, dict) else None
    content = edited.get(kind) if isinstance(kind, str) else None
    if not isinstance(content, dict):
        return ""
    return str(content.get("body") or "") if kind == "text" else str(content.get("caption") or "")


def conversation_for(company) -> list[ConversationLine]:
    """A company's WhatsApp conversation, inbound and outbound, oldest first.

    At the same instant the customer's message comes before our reply to it. An edit or a
    deletion is shown on the message it changes (its first text kept, what changed under
    it); one naming a message not in the conversation is a line of its own.
    """
    inbound = list(InboundMessage.objects.filter(company=company).order_by("received_at", "pk"))
    lines = {m.wamid: ConversationLine(m.received_at, True, _inbound_text(m), m.status, m.message_type)
             for m in inbound if m.message_type not in CHANGE_TYPES}
    for m in inbound:
        original = lines.get(changed_message_id(m))
        if original is None and m.message_type in CHANGE_TYPES:
            text = edit_text(m) if m.message_type == "edit" else changed_message_id(m)
            lines[m.wamid] = ConversationLine(m.received_at, True, text, m.status, m.message_type)
        elif original is not None and m.message_type == "edit":
            original.edits.append(edit_text(m))
        elif original is not None:
            original.deleted = True
    pks = {m.wamid: m.pk for m in inbound}
    lines = [(line.at, 0, pks[wamid], line) for wamid, line in lines.items()]
    lines += [(m.created_at, 1, m.pk, ConversationLine(m.created_at, False, m.body, m.status, options=[
                  item["title"] for item in (m.options or {}).get("items") or []]))
              for m in OutboundMessage.objects.filter(company=company)]
    return [line for *_, line in sorted(lines, key=lambda item: item[:3])]
