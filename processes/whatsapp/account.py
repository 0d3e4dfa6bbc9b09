"""What Meta says of our templates and our business account: kept from their webhooks, read
by health, the metrics and the startup check.

Each attribute of a template (status, quality, category) moves only forward in Meta's time:
webhooks arrive out of order, and an older APPROVED must never hide a newer REJECTED.
"""
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, transaction

from durable import clock
from processes.webhooks.services import safe_text, storable
from processes.whatsapp import templates
from processes.whatsapp.models import AccountEvent, WhatsAppTemplate

TEMPLATE_FIELDS = {"message_template_status_update", "message_template_quality_update",
                   "template_category_update"}
ACCOUNT_FIELD = "account_update"
ACCOUNT_FIELDS = TEMPLATE_FIELDS | {ACCOUNT_FIELD}

# Which column each template field sets, from which key of the change's value.
_TEMPLATE_UPDATES = {
    "message_template_status_update": ("status", "event", "status_at"),
    "message_template_quality_update": ("quality", "new_quality_score", "quality_at"),
    "template_category_update": ("category", "new_category", "category_at"),
}
# A ban in one of these states stops the account; REINSTATE lifts it.
BAN_STATES = {"DISABLE", "SCHEDULE_FOR_DISABLE"}


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
    language = templates.language_code(_code(value.get("message_template_language"),
                                              "message_template_language", max_length=16))
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
        template.reason = safe_text(reason)[:2000] if isinstance(reason, str) and reason.upper() != "NONE" else ""
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
        pass   # created by a concurrent delivery: locked below like any other
    return WhatsAppTemplate.objects.select_for_update().get(name=name, language=language)


def account_event_record(value: dict, *, account_id, occurred_at: datetime | None, delivery=None,
                         field: str = ACCOUNT_FIELD) -> str:
    """Keep an account event whole, once (a redelivery, however batched, is the same row). A
    change of another ``field`` (a number's quality, account alerts, ...) is kept the same way,
    its event the field's name (and its own ``event``, if it has one), for an operator."""
    if field == ACCOUNT_FIELD:
        event = _code(value.get("event"), "event", max_length=64).upper()
    else:
        own = value.get("event") if isinstance(value.get("event"), str) and value.get("event").strip() else ""
        event = safe_text(f"{field}:{own.strip()}" if own else field)[:64]
    detail = storable(value if field == ACCOUNT_FIELD else {"field": field, **value})
    account = safe_text(str(account_id or ""))[:64]
    fingerprint = hashlib.sha256(json.dumps(
        [account, occurred_at.isoformat() if occurred_at else None, detail],
        sort_keys=True, ensure_ascii=True).encode()).hexdigest()
    try:
        with transaction.atomic():
            AccountEvent.objects.get_or_create(fingerprint=fingerprint, defaults={
                "event": event, "account_id": account, "detail": detail,
                "occurred_at": occurred_at or clock.now(), "received_at": clock.now(), "delivery": delivery})
    except IntegrityError:
        pass   # a concurrent delivery kept it
    return f"account {event}"


def change_apply(field: str, value: dict, *, account_id, occurred_at: datetime | None, delivery=None) -> str:
    if field in TEMPLATE_FIELDS:
        return template_change_apply(field, value, occurred_at=occurred_at)
    return account_event_record(value, account_id=account_id, occurred_at=occurred_at, delivery=delivery,
                                field=field)


# --- reads: health, metrics, the startup check ---

def known_templates() -> list[WhatsAppTemplate]:
    return list(WhatsAppTemplate.objects.all())


def templates_blocked() -> list[WhatsAppTemplate]:
    """Configured templates Meta rejected, paused or disabled: their messages cannot go out."""
    pairs = templates.configured_pairs()
    return [row for row in WhatsAppTemplate.objects.filter(status__in=templates.BLOCKING_STATUSES)
            if (row.name, row.language) in pairs]


def templates_unconfirmed() -> list[tuple[str, str]]:
    """Configured (name, language) pairs Meta never reported approved (no row, or another status)."""
    approved = set(WhatsAppTemplate.objects.filter(status="APPROVED").values_list("name", "language"))
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
    restriction = AccountEvent.objects.filter(event="ACCOUNT_RESTRICTION").order_by("-occurred_at", "-pk").first()
    if restriction is not None:
        info = restriction.detail.get("restriction_info") or []
        active = [item for item in info if isinstance(item, dict) and _still_holds(item.get("expiration"), now)]
        if active:
            restricted = True
            detail.append("restricted: " + ", ".join(str(item.get("restriction_type", "?")) for item in active))
    ban = AccountEvent.objects.filter(event="DISABLED_UPDATE").order_by("-occurred_at", "-pk").first()
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
        return True   # no expiration: holds until Meta says otherwise
