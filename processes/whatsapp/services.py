"""Writes of the WhatsApp channel: store inbound messages, route them, apply statuses, send.

Inbound messages are stored raw first (unique on their id) in the webhook's
transaction; routing them to a workflow happens once that transaction commits, so a
failure while routing never loses a message: it stays visible with a note.
"""
import logging
import mimetypes
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone as dt_timezone

from django.core.files.base import ContentFile
from django.db import IntegrityError, transaction

from durable import clock
from processes import conf
from processes.whatsapp.backends import Outgoing, get_backend
from processes.whatsapp.models import (
    STATUS_RANK,
    InboundMessage,
    InboundStatus,
    OutboundMessage,
    OutboundStatus,
)
from processes.whatsapp.selectors import last_inbound_at

log = logging.getLogger(__name__)

SUPPORTED_TYPES = {"text", "document", "image"}
CUSTOMER_SERVICE_WINDOW = timedelta(hours=24)


class PayloadInvalid(ValueError):
    """The body is JSON but not a WhatsApp webhook; the message says what is wrong."""


@dataclass
class Receipt:
    messages: int = 0
    new_message_ids: list[int] = field(default_factory=list)
    statuses: int = 0


def _as_list(value, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise PayloadInvalid(f"{where} must be a list")
    return value


def _as_dict(value, where: str) -> dict:
    if not isinstance(value, dict):
        raise PayloadInvalid(f"{where} must be an object")
    return value


def parse_webhook(payload) -> tuple[list[dict], list[dict]]:
    """Split a (possibly batched) webhook into messages and statuses, checking its shape.

    The whole body is checked before anything is stored, so a malformed delivery is
    rejected as a whole with a message saying where it is wrong.
    """
    payload = _as_dict(payload, "the body")
    messages, statuses = [], []
    for i, entry in enumerate(_as_list(payload.get("entry"), "entry")):
        entry = _as_dict(entry, f"entry[{i}]")
        for j, change in enumerate(_as_list(entry.get("changes"), f"entry[{i}].changes")):
            where = f"entry[{i}].changes[{j}]"
            value = _as_dict(_as_dict(change, where).get("value", {}), f"{where}.value")
            metadata = value.get("metadata") or {}
            contacts = [c for c in _as_list(value.get("contacts"), f"{where}.value.contacts")
                        if isinstance(c, dict)]
            for k, message in enumerate(_as_list(value.get("messages"), f"{where}.value.messages")):
                message = _as_dict(message, f"{where}.value.messages[{k}]")
                if not isinstance(message.get("id"), str) or not message["id"]:
                    raise PayloadInvalid(f"{where}.value.messages[{k}] has no id")
                messages.append({"message": message, "contact": _contact_for(message, contacts),
                                 "metadata": metadata})
            for k, status in enumerate(_as_list(value.get("statuses"), f"{where}.value.statuses")):
                status = _as_dict(status, f"{where}.value.statuses[{k}]")
                if not status.get("id") or not status.get("status"):
                    raise PayloadInvalid(f"{where}.value.statuses[{k}] needs an id and a status")
                statuses.append(status)
    return messages, statuses


def _contact_for(message: dict, contacts: list[dict]) -> dict:
    for contact in contacts:
        if (message.get("from") and contact.get("wa_id") == message.get("from")) or (
                message.get("from_user_id") and contact.get("user_id") == message.get("from_user_id")):
            return contact
    return contacts[0] if len(contacts) == 1 else {}


def _timestamp(value) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value), tz=dt_timezone.utc)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def webhook_receive(payload) -> Receipt:
    """Store every message of a webhook (redeliveries are no-ops), apply its statuses, and
    route the new messages once the caller's transaction commits."""
    messages, statuses = parse_webhook(payload)
    receipt = Receipt(messages=len(messages), statuses=len(statuses))
    with transaction.atomic():
        for item in messages:
            message, contact = item["message"], item["contact"]
            stored = inbound_store(
                wamid=message["id"], message_type=str(message.get("type") or "unknown")[:32],
                sender_wa_id=str(message.get("from") or contact.get("wa_id") or "")[:32],
                sender_user_id=str(message.get("from_user_id") or contact.get("user_id") or "")[:128],
                phone_number_id=str(item["metadata"].get("phone_number_id") or "")[:64],
                payload=item, sent_at=_timestamp(message.get("timestamp")))
            if stored is not None:
                receipt.new_message_ids.append(stored.pk)
        for status in statuses:
            status_apply(status)
        for message_id in receipt.new_message_ids:
            transaction.on_commit(lambda pk=message_id: inbound_process(pk), robust=True)
    return receipt


def inbound_store(*, wamid: str, **fields) -> InboundMessage | None:
    """Insert the message unless its id was seen; None for a redelivery."""
    if InboundMessage.objects.filter(wamid=wamid).exists():
        return None
    try:
        with transaction.atomic():
            return InboundMessage.objects.create(wamid=wamid, received_at=clock.now(), **fields)
    except IntegrityError:
        return None  # a concurrent delivery of the same message won the race


def inbound_process(message_id: int) -> InboundMessage:
    """Route a stored message to its sender's onboarding run (starting one if needed).

    Idempotent: only messages still ``received`` are routed; a failure leaves the message
    ``failed`` with the error as its note, for an operator to process again.
    """
    from processes.onboarding.services import onboarding_route_message

    try:
        with transaction.atomic():
            message = InboundMessage.objects.select_for_update().get(pk=message_id)
            if message.status not in (InboundStatus.RECEIVED, InboundStatus.FAILED):
                return message
            status, note, company = onboarding_route_message(message)
            message.status, message.note, message.company = status, note, company
            message.processed_at = clock.now()
            message.save(update_fields=["status", "note", "company", "processed_at"])
            return message
    except Exception as exc:
        log.exception("inbound message %s could not be routed", message_id)
        InboundMessage.objects.filter(pk=message_id).update(
            status=InboundStatus.FAILED, note=f"{type(exc).__name__}: {exc}"[:2000])
        return InboundMessage.objects.get(pk=message_id)


STALE_AFTER = timedelta(minutes=1)


def inbound_route_stale(*, older_than: timedelta = STALE_AFTER, limit: int = 200) -> int:
    """Route messages stored but never routed (the web process died between its commit
    and the on-commit routing). Run by beat; routing is idempotent, so a message the web
    process is routing right now is not routed twice."""
    cutoff = clock.now() - older_than
    stale = list(InboundMessage.objects.filter(status=InboundStatus.RECEIVED, received_at__lte=cutoff)
                 .order_by("received_at").values_list("pk", flat=True)[:limit])
    for message_id in stale:
        inbound_process(message_id)
    return len(stale)


def status_apply(status: dict) -> OutboundMessage | None:
    """Move an outbound message's status forward (sent, delivered, read, failed)."""
    name = str(status.get("status"))
    message = OutboundMessage.objects.select_for_update().filter(
        provider_message_id=str(status["id"])).first()
    if message is None:
        log.info("status %s for an unknown outbound message %s", name, status["id"])
        return None
    event = {"status": name, "timestamp": status.get("timestamp"), "errors": status.get("errors", [])}
    if event in message.status_history:
        return message
    message.status_history = [*message.status_history, event]
    if name in STATUS_RANK and STATUS_RANK[name] > STATUS_RANK.get(message.status, 0):
        message.status = name
        message.status_updated_at = clock.now()
        if name == OutboundStatus.FAILED:
            message.error = "; ".join(str(e.get("title") or e) for e in status.get("errors", []))
    message.save(update_fields=["status_history", "status", "status_updated_at", "error"])
    return message


def message_send(*, idempotency_key: str, body: str, company=None, to_wa_id: str = "",
                 to_user_id: str = "") -> OutboundMessage:
    """Send a message once per idempotency key: a step that runs again finds it sent.

    Free text inside the 24-hour customer-service window, the configured template
    outside it. A crash after the provider accepted and before our row was updated can
    still send twice; the provider offers no idempotency key to close that gap.
    """
    if company is not None:
        to_wa_id, to_user_id = company.wa_id or "", company.user_id or ""
    message, _ = OutboundMessage.objects.get_or_create(idempotency_key=idempotency_key, defaults={
        "company": company, "to_wa_id": to_wa_id, "to_user_id": to_user_id, "body": body,
        "backend": conf.setting("WHATSAPP_BACKEND", "console"), "created_at": clock.now()})
    if message.status != OutboundStatus.QUEUED:
        return message
    last = last_inbound_at(wa_id=to_wa_id, user_id=to_user_id)
    outside = last is None or clock.now() - last > CUSTOMER_SERVICE_WINDOW
    outgoing = Outgoing(to_wa_id=to_wa_id, to_user_id=to_user_id, body=body)
    if outside:
        outgoing.template_name = conf.setting("WHATSAPP_TEMPLATE_NAME", "")
        outgoing.template_language = conf.setting("WHATSAPP_TEMPLATE_LANGUAGE", "pt_BR")
    provider_id = get_backend().send(outgoing, idempotency_key=idempotency_key)
    message.provider_message_id, message.template_name = provider_id, outgoing.template_name
    message.status, message.sent_at = OutboundStatus.SENT, clock.now()
    with transaction.atomic():
        message.save(update_fields=["provider_message_id", "template_name", "status", "sent_at"])
    return message


def media_download(document) -> bool:
    """Fetch a document's bytes through the backend; False when the backend has none."""
    if document.file:
        return True
    media = get_backend().download_media(document.media_id)
    if media is None:
        return False
    # Stored under a name we choose: the customer's file name ("../x.pdf", "a/b.pdf") is
    # kept in file_name for display and download only.
    extension = mimetypes.guess_extension(document.mime_type or media.mime_type or "") or ""
    safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", str(document.media_id))[:100] or "media"
    document.file.save(f"{safe_id}{extension}", ContentFile(media.content), save=False)
    document.size, document.sha256 = len(media.content), media.sha256
    document.mime_type = document.mime_type or media.mime_type
    document.save(update_fields=["file", "size", "sha256", "mime_type"])
    return True
