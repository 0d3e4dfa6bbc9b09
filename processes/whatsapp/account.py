"""What Meta says of our templates and our business account, kept from its webhooks (the
reads, for health, the metrics and the startup check, are in ``selectors``).

Each attribute of a template (status, quality, category) moves only forward in Meta's time:
webhooks arrive out of order, and an older APPROVED must never hide a newer REJECTED.
"""

import hashlib
import json
from datetime import datetime

from django.db import IntegrityError, transaction

from durable import clock
from processes.webhooks.services import safe_text, storable
from processes.whatsapp import templates
from processes.whatsapp.models import AccountEvent, WhatsAppTemplate

TEMPLATE_FIELDS = {
    "message_template_status_update",
    "message_template_quality_update",
    "template_category_update",
}
ACCOUNT_FIELD = "account_update"
ACCOUNT_FIELDS = TEMPLATE_FIELDS | {ACCOUNT_FIELD}

# Which column each template field sets, from which key of the change's value.
_TEMPLATE_UPDATES = {
    "message_template_status_update": ("status", "event", "status_at"),
    "message_template_quality_update": ("quality", "new_quality_score", "quality_at"),
    "template_category_update": ("category", "new_category", "category_at"),
}


class ChangeRefused(ValueError):
    """A template or account change of the wrong shape (quarantined with this reason)."""


def _code(value, what: str, *, max_length: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ChangeRefused(f"{what} is missing or not text")
    return safe_text(value.strip())[:max_length]


def template_change_apply(field: str, value: dict, *, occurred_at: datetime | None) -> str:
    """Keep what a template webhook says, unless the template already holds something Meta
    said later; what was applied, for the delivery's outcome."""
    column, key, at_column = _TEMPLATE_UPDATES[field]
    name = _code(value.get("message_template_name"), "message_template_name", max_length=512)
    language = templates.language_code(
        _code(value.get("message_template_language"), "message_template_language", max_length=16)
    )
    code = _code(value.get(key), key, max_length=32).upper()
    occurred_at = occurred_at or clock.now()
    template = _template_locked(name, language)
    said = f"template {name} ({language}) {column} {code}"
    previous = getattr(template, at_column)
    if previous is not None and previous > occurred_at:
        return f"{said}: older than the one kept, not applied"
    setattr(template, column, code)
    setattr(template, at_column, occurred_at)
    if column == "status":
        reason = value.get("reason")
        template.reason = (
            safe_text(reason)[:2000] if isinstance(reason, str) and reason.upper() != "NONE" else ""
        )
    if value.get("message_template_id") not in (None, ""):
        template.template_id = safe_text(str(value["message_template_id"]))[:64]
    template.updated_at = clock.now()
    template.save()
    return said


def _template_locked(name: str, language: str) -> WhatsAppTemplate:
    try:
        with transaction.atomic():
            WhatsAppTemplate.objects.get_or_create(name=name, language=language)
    except IntegrityError:
        pass  # created by a concurrent delivery: locked below like any other
    return WhatsAppTemplate.objects.select_for_update().get(name=name, language=language)


def account_event_record(
    value: dict,
    *,
    account_id,
    occurred_at: datetime | None,
    delivery=None,
    field: str = ACCOUNT_FIELD,
) -> str:
    """Keep an account event whole, once (a redelivery, however batched, is the same row). A
    change of another ``field`` (a number's quality, account alerts, ...) is kept the same way,
    its event the field's name (and its own ``event``, if it has one), for an operator."""
    if field == ACCOUNT_FIELD:
        event = _code(value.get("event"), "event", max_length=64).upper()
    else:
        own = (
            value.get("event")
            if isinstance(value.get("event"), str) and value.get("event").strip()
            else ""
        )
        event = safe_text(f"{field}:{own.strip()}" if own else field)[:64]
    detail = storable(value if field == ACCOUNT_FIELD else {"field": field, **value})
    account = safe_text(str(account_id or ""))[:64]
    fingerprint = hashlib.sha256(
        json.dumps(
            [account, occurred_at.isoformat() if occurred_at else None, detail],
            sort_keys=True,
            ensure_ascii=True,
        ).encode()
    ).hexdigest()
    try:
        with transaction.atomic():
            AccountEvent.objects.get_or_create(
                fingerprint=fingerprint,
                defaults={
                    "event": event,
                    "account_id": account,
                    "detail": detail,
                    "occurred_at": occurred_at or clock.now(),
                    "received_at": clock.now(),
                    "delivery": delivery,
                },
            )
    except IntegrityError:
        pass  # a concurrent delivery kept it
    return f"account {event}"


def change_apply(
    field: str, value: dict, *, account_id, occurred_at: datetime | None, delivery=None
) -> str:
    if field in TEMPLATE_FIELDS:
        return template_change_apply(field, value, occurred_at=occurred_at)
    return account_event_record(
        value, account_id=account_id, occurred_at=occurred_at, delivery=delivery, field=field
    )
