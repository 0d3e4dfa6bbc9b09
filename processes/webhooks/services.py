"""Writes of the webhook intake: keep a signed delivery's exact bytes, quarantine the parts
that cannot be processed, and make parsed values safe to store.

Nothing here may raise on strange input: it runs for the parts that already went wrong.
"""

import hashlib
import json

from django.db import transaction
from django.db.models import F

from durable import clock
from processes import conf, signing
from processes.webhooks.models import QuarantinedItem, WebhookDelivery

SECRET_SETTINGS = {"whatsapp": "WHATSAPP_APP_SECRET", "payments": "PAYMENTS_WEBHOOK_SECRET"}


class TooDeep(ValueError):
    """A value nests deeper than we store in a parsed row (the raw bytes keep it whole)."""


def delivery_store(
    *, source: str, body: bytes, signature: str = "", remote_addr: str = ""
) -> WebhookDelivery:
    """Keep the body as received, before anything parses it; a redelivery of the same bytes
    is the same row (counted), so its parts are not quarantined twice."""
    digest = hashlib.sha256(body).hexdigest()
    with transaction.atomic():
        delivery, created = WebhookDelivery.objects.get_or_create(
            source=source,
            body_sha256=digest,
            defaults={
                "body": body,
                "signature": signature[:255],
                "remote_addr": remote_addr[:64],
                "received_at": clock.now(),
            },
        )
        if not created:
            WebhookDelivery.objects.filter(pk=delivery.pk).update(
                times_received=F("times_received") + 1
            )
    return delivery


def delivery_outcome(delivery: WebhookDelivery, outcome: str) -> None:
    """What processing made of the delivery; it is processed from now on."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(
        outcome=safe_text(outcome), processed_at=clock.now()
    )


def delivery_signature_valid(delivery: WebhookDelivery) -> bool:
    """Check the stored signature against the stored bytes with the secret configured now."""
    secret = conf.setting(SECRET_SETTINGS.get(delivery.source, ""), "")
    return bool(secret) and signing.is_valid(bytes(delivery.body), delivery.signature, secret)


def item_quarantine(
    *,
    delivery: WebhookDelivery,
    where: str,
    kind: str,
    reason: str,
    fragment=None,
    handled_by: str = "",
) -> QuarantinedItem:
    """Keep a part that could not be processed where an operator sees it (once per place).

    ``handled_by`` keeps a part we deliberately leave alone (a call's status) out of the
    work list while it stays in the list of items, with the reason.
    """
    now = clock.now()
    item, _ = QuarantinedItem.objects.get_or_create(
        delivery=delivery,
        where=where[:255],
        defaults={
            "kind": kind[:32],
            "reason": safe_text(reason),
            "fragment": fragment_text(fragment),
            "created_at": now,
            "resolved_at": now if handled_by else None,
            "resolved_by": handled_by[:150],
        },
    )
    return item


def quarantine_resolve(items, *, actor: str) -> int:
    """Mark quarantined items as handled by ``actor``; returns how many were open."""
    return items.filter(resolved_at__isnull=True).update(
        resolved_at=clock.now(), resolved_by=actor[:150]
    )


def fragment_text(value) -> str:
    """A part as ASCII JSON: lone surrogates and NULs become escapes that any database stores."""
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=True, indent=1, sort_keys=True, default=repr)
    except (RecursionError, ValueError, TypeError):
        return "(too deeply nested to show: see the delivery's body)"


def safe_text(value: str) -> str:
    """Text any database and page can hold: lone surrogates and NUL become U+FFFD."""
    value = str(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return value.replace("\x00", "\ufffd")


def is_verbatim(value: str) -> bool:
    """True when ``value`` can be stored as it is; identifiers that cannot are never rewritten
    (two different ids must not become one), they are quarantined."""
    return safe_text(value) == value


def storable(value, *, max_depth: int = 32, _depth: int = 0):
    """A copy of parsed JSON whose text is safe to store and render; TooDeep past ``max_depth``."""
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, (dict, list)):
        if _depth >= max_depth:
            raise TooDeep(f"nested more than {max_depth} levels deep")
        if isinstance(value, dict):
            return {
                safe_text(key): storable(item, max_depth=max_depth, _depth=_depth + 1)
                for key, item in value.items()
            }
        return [storable(item, max_depth=max_depth, _depth=_depth + 1) for item in value]
    return value
