"""Reads of the WhatsApp channel."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Max, Q, QuerySet
from django.utils.translation import gettext_lazy as _

from durable import clock
from processes.whatsapp import templates
from processes.whatsapp.models import (
    CHANGE_TYPES,
    AccountEvent,
    InboundMessage,
    InboundStatus,
    OutboundMessage,
    OutboundStatus,
    WhatsAppTemplate,
)


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
    return InboundMessage.objects.filter(
        status__in=[InboundStatus.UNMATCHED, InboundStatus.UNSUPPORTED, InboundStatus.FAILED]
    )


# What a message that is not text was, in the reader's language.
KIND_LABELS = {
    "document": _("document"),
    "image": _("image"),
    "audio": _("audio"),
    "video": _("video"),
    "sticker": _("sticker"),
    "location": _("location"),
    "contacts": _("contact card"),
    "reaction": _("reaction"),
    "system": _("notice from WhatsApp"),
    "interactive": _("chose"),
    "button": _("chose"),
    "edit": _("edit of a message not shown here"),
    "revoke": _("deletion of a message not shown here"),
}


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
        return (
            str(OutboundStatus(self.status).label)
            if self.status in OutboundStatus.values
            else self.status
        )


def text_body(message: InboundMessage) -> str:
    """A text message's body ("" for any other message, or a text of the wrong shape)."""
    text = ((message.payload or {}).get("message") or {}).get("text")
    return (
        str(text.get("body") or "")
        if message.message_type == "text" and isinstance(text, dict)
        else ""
    )


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
    lines = {
        m.wamid: ConversationLine(m.received_at, True, _inbound_text(m), m.status, m.message_type)
        for m in inbound
        if m.message_type not in CHANGE_TYPES
    }
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
    lines += [
        (
            m.created_at,
            1,
            m.pk,
            ConversationLine(
                m.created_at,
                False,
                m.body,
                m.status,
                options=[item["title"] for item in (m.options or {}).get("items") or []],
            ),
        )
        for m in OutboundMessage.objects.filter(company=company)
    ]
    return [line for *_, line in sorted(lines, key=lambda item: item[:3])]


# --- what Meta says of our templates and account: health, the metrics, the startup check ---

# A ban in one of these states stops the account; REINSTATE lifts it.
BAN_STATES = {"DISABLE", "SCHEDULE_FOR_DISABLE"}


def known_templates() -> list[WhatsAppTemplate]:
    return list(WhatsAppTemplate.objects.all())


def templates_blocked() -> list[WhatsAppTemplate]:
    """Configured templates Meta rejected, paused or disabled: their messages cannot go out."""
    pairs = templates.configured_pairs()
    return [
        row
        for row in WhatsAppTemplate.objects.filter(status__in=templates.BLOCKING_STATUSES)
        if (row.name, row.language) in pairs
    ]


def templates_unconfirmed() -> list[tuple[str, str]]:
    """Configured (name, language) pairs Meta never reported approved (no row, or another
    status)."""
    approved = set(
        WhatsAppTemplate.objects.filter(status="APPROVED").values_list("name", "language")
    )
    return sorted(pair for pair in templates.configured_pairs() if pair not in approved)


@dataclass(frozen=True)
class AccountState:
    restricted: bool
    disabled: bool
    detail: str


def account_state() -> AccountState:
    """Whether the business account is restricted or disabled now, from its latest events:
    a restriction holds until its expiration (or a later restriction event without it); a
    ban until a later REINSTATE."""
    now = clock.now()
    restricted, disabled, detail = False, False, []
    restriction = (
        AccountEvent.objects.filter(event="ACCOUNT_RESTRICTION")
        .order_by("-occurred_at", "-pk")
        .first()
    )
    if restriction is not None:
        info = restriction.detail.get("restriction_info") or []
        active = [
            item
            for item in info
            if isinstance(item, dict) and _still_holds(item.get("expiration"), now)
        ]
        if active:
            restricted = True
            detail.append(
                "restricted: "
                + ", ".join(str(item.get("restriction_type", "?")) for item in active)
            )
    ban = (
        AccountEvent.objects.filter(event="DISABLED_UPDATE").order_by("-occurred_at", "-pk").first()
    )
    if ban is not None:
        state = str((ban.detail.get("ban_info") or {}).get("waba_ban_state", "")).upper()
        if state in BAN_STATES:
            disabled = True
            detail.append(f"disabled: {state}")
    return AccountState(restricted=restricted, disabled=disabled, detail="; ".join(detail))


def _still_holds(expiration, now: datetime) -> bool:
    try:
        return int(expiration) > now.timestamp()
    except (TypeError, ValueError):
        return True  # no expiration: holds until Meta says otherwise
