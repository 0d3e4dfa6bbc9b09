"""Writes of the WhatsApp channel: store inbound messages, route them, apply statuses, send.

Each message and status of a delivery is taken on its own (unique on its id, in its own
savepoint): a part of the wrong shape is quarantined with the reason and never costs its
neighbours. Routing a message to a workflow happens once it is committed, so a failure
while routing never loses it either: it stays visible with a note.
"""

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from celery import current_app
from django.core.cache import caches
from django.db import IntegrityError, transaction
from django.db.models import F

from durable import clock
from durable.locks import advisory_xact_lock
from durable.runtime import tracing
from processes import conf
from processes.webhooks.models import WebhookDelivery, WebhookSource
from processes.webhooks.services import (
    TooDeep,
    delivery_outcome,
    delivery_store,
    is_verbatim,
    item_quarantine,
    safe_text,
    storable,
)
from processes.whatsapp import account, routing, templates
from processes.whatsapp.backends import (
    INTERACTIVE_UNSUPPORTED_CODES,
    InteractiveUnsupported,
    OptionList,
    Outgoing,
    ReplyButton,
    get_backend,
    interactive_check,
    options_as_dict,
    options_from_dict,
)
from processes.whatsapp.models import (
    STATUS_RANK,
    InboundMessage,
    InboundStatus,
    OutboundMessage,
    OutboundStatus,
    PendingStatus,
)
from processes.whatsapp.selectors import last_inbound_at

log = logging.getLogger(__name__)

SUPPORTED_TYPES = {"text", "document", "image"}
# The change field of customers' messages and our messages' statuses.
MESSAGES_FIELD = "messages"
CUSTOMER_SERVICE_WINDOW = timedelta(hours=24)


# Longest id we store whole; a longer one is quarantined, never cut (two ids must not merge).
ID_MAX = 128
# A message nested deeper than this is quarantined (its bytes stay on the delivery).
PART_MAX_DEPTH = 32


@dataclass
class Receipt:
    messages: int = 0
    new_message_ids: list[int] = field(default_factory=list)
    statuses: int = 0
    statuses_pending: int = 0
    calls: int = 0
    account_changes: list[str] = field(default_factory=list)
    quarantined: int = 0
    delivery_id: int | None = None


@dataclass
class Part:
    """One message or status of a delivery, where it sits, and what is wrong with it (if
    anything)."""

    kind: str
    where: str
    value: object
    problem: str = ""
    contacts: list = field(default_factory=list)
    metadata: dict = field(default_factory=dict)


def webhook_parts(payload):
    """Every message and status of a (possibly batched) webhook, each on its own; a change
    about a template or the account (its ``field`` says which) is one part of its own.

    A part of the wrong shape is yielded with its problem instead of stopping the walk, so
    one bad message or a stray ``"metadata": "x"`` never costs the good messages beside it.
    """
    if not isinstance(payload, dict):
        yield Part("delivery", "the body", payload, "the body is not a JSON object")
        return
    entries = payload.get("entry")
    if not isinstance(entries, list):
        if entries is not None:
            yield Part("delivery", "entry", entries, "entry is not a list")
        return
    for i, entry in enumerate(entries):
        changes = entry.get("changes") if isinstance(entry, dict) else None
        if not isinstance(changes, list):
            if changes is not None or not isinstance(entry, dict):
                yield Part("entry", f"entry[{i}]", entry, "an entry needs a list of changes")
            continue
        for j, change in enumerate(changes):
            where = f"entry[{i}].changes[{j}]"
            value = change.get("value") if isinstance(change, dict) else None
            if not isinstance(value, dict):
                yield Part("change", where, change, "a change needs an object 'value'")
                continue
            if change.get("field") in account.ACCOUNT_FIELDS:
                kind = "account" if change["field"] == account.ACCOUNT_FIELD else "template"
                yield Part(
                    kind,
                    f"{where}.value",
                    value,
                    "",
                    metadata={
                        "field": change["field"],
                        "account_id": entry.get("id"),
                        "time": entry.get("time"),
                    },
                )
                continue
            if (
                change.get("field") != MESSAGES_FIELD
                and "messages" not in value
                and "statuses" not in value
            ):
                # A field we do not act on (a number's quality, account alerts, calls, a user's
                # preferences...): kept whole as an account event, never dropped unseen.
                yield Part(
                    "account",
                    f"{where}.value",
                    value,
                    "",
                    metadata={
                        "field": str(change.get("field") or "(no field)"),
                        "account_id": entry.get("id"),
                        "time": entry.get("time"),
                    },
                )
                continue
            metadata = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
            contacts = value.get("contacts") if isinstance(value.get("contacts"), list) else []
            contacts = [c for c in contacts if isinstance(c, dict)]
            if value.get(
                "errors"
            ):  # about the account or the change, not one message: for an operator
                yield Part(
                    "change", f"{where}.value.errors", value["errors"], "WhatsApp reports errors"
                )
            for key, kind in (("messages", "message"), ("statuses", "status")):
                parts = value.get(key)
                if parts is None:
                    continue
                if not isinstance(parts, list):
                    yield Part(kind, f"{where}.value.{key}", parts, f"{key} is not a list")
                    continue
                for k, part in enumerate(parts):
                    yield Part(kind, f"{where}.value.{key}[{k}]", part, "", contacts, metadata)


def _identifier(value, what: str) -> tuple[str, str]:
    """(the id as text, a problem or ""): ids are stored whole and verbatim, or not at all."""
    if value is None or value == "":
        return "", ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return "", f"{what} is not text"
    text = str(value)
    if len(text) > ID_MAX:
        return "", f"{what} is longer than {ID_MAX} characters"
    if not is_verbatim(text):
        return "", f"{what} contains characters that cannot be stored (NUL, lone surrogate)"
    return text, ""


def _message_fields(part: Part) -> tuple[dict, str]:
    """The columns of an inbound message, or a problem that sends it to quarantine."""
    message = part.value
    if not isinstance(message, dict):
        return {}, "a message is not an object"
    wamid, problem = _identifier(message.get("id"), "the message id")
    if problem or not wamid:
        return {}, problem or "the message has no id"
    contact = _contact_for(message, part.contacts)
    senders = {}
    for key, contact_key, what in (
        ("from", "wa_id", "the sender's wa_id"),
        ("from_user_id", "user_id", "the sender's user id"),
    ):
        senders[key], problem = _identifier(message.get(key), what)
        if problem:
            return {}, problem
        if not senders[key]:  # the sender's own contact only fills a gap: a bad one is ignored
            fallback, problem = _identifier(contact.get(contact_key), what)
            senders[key] = "" if problem else fallback
    try:
        stored = {
            "message": storable(message, max_depth=PART_MAX_DEPTH),
            "contact": _storable_or_empty(contact),
            "metadata": _storable_or_empty(part.metadata),
        }
    except TooDeep as exc:
        return {}, f"the message is {exc}"
    message_type = message.get("type")
    return {
        "wamid": wamid,
        "sender_wa_id": senders["from"],
        "sender_user_id": senders["from_user_id"],
        "message_type": safe_text(message_type)[:32]
        if isinstance(message_type, str) and message_type
        else "unknown",
        "phone_number_id": safe_text(stored["metadata"].get("phone_number_id") or "")[:64],
        "payload": stored,
        "sent_at": _timestamp(message.get("timestamp")),
    }, ""


def _storable_or_empty(value: dict) -> dict:
    try:
        return storable(value, max_depth=PART_MAX_DEPTH)
    except TooDeep:
        return {}


def _contact_for(message: dict, contacts: list[dict]) -> dict:
    """The sender's own contact: the one naming the message's ``from`` (or ``from_user_id``).

    Never a contact merely because it is the only one: a delivery's contact may be someone
    else (a shared card, a group's member), and taking its user id would attach the message
    to that person's company.
    """
    for contact in contacts:
        if (message.get("from") and contact.get("wa_id") == message.get("from")) or (
            message.get("from_user_id") and contact.get("user_id") == message.get("from_user_id")
        ):
            return contact
    return {}


def _timestamp(value) -> datetime | None:
    try:
        return datetime.fromtimestamp(int(value), tz=UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def webhook_receive(payload, *, delivery: WebhookDelivery | None = None) -> Receipt:
    """Store every message of a webhook (redeliveries are no-ops) and apply its statuses,
    each on its own; what cannot be stored or applied is quarantined with the reason. The
    new messages are in the receipt, for the caller to route (``intake_drain`` does, in order).

    ``delivery`` is the stored raw body; code that builds a payload itself (the demo, tests)
    gets one made from the payload.
    """
    if delivery is None:
        delivery = delivery_store(source=WebhookSource.WHATSAPP, body=json.dumps(payload).encode())
    receipt = Receipt(delivery_id=delivery.pk)
    for part in webhook_parts(payload):
        problem = part.problem or _part_apply(part, receipt, delivery)
        if problem:
            item_quarantine(
                delivery=delivery,
                where=part.where,
                kind=part.kind,
                reason=problem,
                fragment=None if part.where == "the body" else part.value,
            )  # the body is kept
            receipt.quarantined += 1
    pending = (
        f" ({receipt.statuses_pending} for messages not known yet)"
        if receipt.statuses_pending
        else ""
    )
    delivery_outcome(
        delivery,
        f"{receipt.messages} message(s), {len(receipt.new_message_ids)} new, "
        f"{receipt.statuses} status(es){pending}"
        f"{f', {receipt.calls} call status(es), kept' if receipt.calls else ''}"
        f"{''.join(f', {change}' for change in receipt.account_changes)}"
        f", {receipt.quarantined} quarantined",
    )
    return receipt


def _part_apply(part: Part, receipt: Receipt, delivery: WebhookDelivery) -> str:
    """Store a message or apply a status in its own savepoint; a problem ("" when done)."""
    if part.kind in ("template", "account"):
        return _account_change_apply(part, receipt, delivery)
    if part.kind == "message":
        fields, problem = _message_fields(part)
        if problem:
            return problem
    elif is_call_status(part.value):
        call_status_keep(part, delivery)
        receipt.calls += 1
        return ""
    else:
        status, problem = _status_fields(part.value)
        if problem:
            return problem
    try:
        with transaction.atomic():
            if part.kind == "message":
                stored = inbound_store(**fields)
                receipt.messages += 1
                if stored is not None:
                    receipt.new_message_ids.append(stored.pk)
            else:
                if status_apply(status, delivery=delivery, where=part.where) is None:
                    receipt.statuses_pending += 1
                receipt.statuses += 1
    except Exception as exc:  # a bug must cost this part only, and stay visible
        log.exception("%s at %s could not be stored", part.kind, part.where)
        return f"{type(exc).__name__}: {exc}"
    return ""


def _account_change_apply(part: Part, receipt: Receipt, delivery: WebhookDelivery) -> str:
    """Keep a template's or the account's change in its own savepoint; a problem ("" when done)."""
    try:
        with transaction.atomic():
            receipt.account_changes.append(
                account.change_apply(
                    part.metadata["field"],
                    part.value,
                    account_id=part.metadata.get("account_id"),
                    occurred_at=_timestamp(part.metadata.get("time")),
                    delivery=delivery,
                )
            )
    except account.ChangeRefused as exc:
        return str(exc)
    except Exception as exc:  # a bug must cost this part only, and stay visible
        log.exception("%s at %s could not be kept", part.kind, part.where)
        return f"{type(exc).__name__}: {exc}"
    return ""


# The Cloud API reports calls (RINGING, ACCEPTED, REJECTED, ...) among the statuses of messages.
CALL_STATUSES = {"ringing", "accepted", "rejected"}
CALL_FIELDS = {"call", "call_id"}
CALL_HANDLED_BY = "intake (call status)"


def is_call_status(status) -> bool:
    """A status about a call (``type: call``, a ``wacid.`` id, a call's state or fields), not a
    message."""
    return isinstance(status, dict) and (
        status.get("type") == "call"
        or str(status.get("id") or "").startswith("wacid.")
        or str(status.get("status") or "").casefold() in CALL_STATUSES
        or bool(CALL_FIELDS & status.keys())
    )


def call_status_keep(part: Part, delivery: WebhookDelivery) -> None:
    """Keep a call's status whole where an operator sees it, marked handled at once: we place
    no calls, so nothing waits for it, and it names a call, never a message of ours, so it is
    neither applied to one nor left among the statuses waiting for their message."""
    state = part.value["status"][:32] if isinstance(part.value.get("status"), str) else "?"
    item_quarantine(
        delivery=delivery,
        where=part.where,
        kind="status",
        fragment=part.value,
        reason=f"call status {state}: calls are not handled here; kept, applied to no message",
        handled_by=CALL_HANDLED_BY,
    )


def _status_fields(status) -> tuple[dict, str]:
    if not isinstance(status, dict):
        return {}, "a status is not an object"
    provider_id, problem = _identifier(status.get("id"), "the status's message id")
    if (
        problem
        or not provider_id
        or not isinstance(status.get("status"), str)
        or not status["status"]
    ):
        return {}, problem or "a status needs an id and a status"
    try:
        return storable(status, max_depth=PART_MAX_DEPTH), ""
    except TooDeep as exc:
        return {}, f"the status is {exc}"


# --- the intake: deliveries are stored by the webhook, parsed and routed by a worker ---

# Namespace of the intake's advisory lock (any 32-bit number no other lock in the project uses).
INTAKE_LOCK = 0x1A7E
INTAKE_KICK_KEY = "processes:intake:kick"
# Deliveries one intake task takes before it hands the rest to the next (a worker is shared).
INTAKE_BATCH = 500


def intake_accept(delivery: WebhookDelivery) -> None:
    """The webhook's part: the delivery is stored (one insert); once that commits, the
    intake is asked to process it. Nothing else happens in the request, however far behind
    the workers are: the provider gets its 200 at once, and no delivery waits in memory."""
    transaction.on_commit(intake_kick, robust=True)


def intake_kick() -> None:
    """Have the pending deliveries processed: here (``WHATSAPP_INTAKE = "inline"``, for
    tests and one-process setups) or by a worker (``"celery"``). Kicks made while one is
    already on its way coalesce: a burst of deliveries sends a task, not one each."""
    if conf.setting("WHATSAPP_INTAKE", "celery") == "inline":
        intake_drain()
        return
    try:
        if not caches[_intake_cache()].add(INTAKE_KICK_KEY, 1, timeout=30):
            return  # one is on its way; it clears the key before it looks for work
    except Exception:
        log.warning("the intake's kick could not be coalesced; sending it anyway", exc_info=True)
    try:
        current_app.send_task("processes.intake", ignore_result=True)
    except Exception:
        log.warning(
            "could not send the intake task; beat's safety net processes the delivery",
            exc_info=True,
        )


def _intake_cache() -> str:
    return "durable" if "durable" in conf.setting("CACHES", {}) else "default"


def intake_drain(*, limit: int = INTAKE_BATCH) -> int:
    """Process pending WhatsApp deliveries, oldest first, up to ``limit``; how many were.

    One at a time under the intake's lock, each in its own transaction: its messages are
    stored, its statuses applied and its new messages routed before the next delivery is
    read, so a sender's messages reach its run in the order the provider sent them, however
    many workers drain at once. A delivery whose processing fails is kept, with the error
    as its outcome, and the intake goes on to the next."""
    try:
        caches[_intake_cache()].delete(INTAKE_KICK_KEY)  # a delivery stored from now on kicks again
    except Exception:
        log.debug("could not clear the intake's kick", exc_info=True)
    done = 0
    while done < limit:
        with transaction.atomic():
            advisory_xact_lock(INTAKE_LOCK, WebhookSource.WHATSAPP)
            delivery = (
                WebhookDelivery.objects.filter(
                    source=WebhookSource.WHATSAPP, processed_at__isnull=True
                )
                .order_by("id")
                .first()
            )
            if delivery is None:
                return done
            _delivery_process(delivery)
        done += 1
    intake_kick()  # more may wait: the next task goes on, behind whatever else the workers have
    return done


def _delivery_process(delivery: WebhookDelivery) -> None:
    with tracing.span("whatsapp.intake", {"whatsapp.delivery_id": delivery.pk}):
        _delivery_apply(delivery)
    WebhookDelivery.objects.filter(pk=delivery.pk).update(processed_at=clock.now())


def _delivery_apply(delivery: WebhookDelivery) -> None:
    try:
        with transaction.atomic():
            receipt = webhook_receive(json.loads(bytes(delivery.body)), delivery=delivery)
            tracing.note(
                {
                    "whatsapp.message_count": receipt.messages,
                    "whatsapp.new_message_count": len(receipt.new_message_ids),
                }
            )
            for message_id in receipt.new_message_ids:
                inbound_process(message_id)
    except Exception as exc:  # a bug must not hold up the line: the bytes stay, with the error
        log.exception("WhatsApp delivery %s could not be processed", delivery.pk)
        tracing.failed(exc)  # its type only: the message may quote the customer
        item_quarantine(
            delivery=delivery,
            where="the body",
            kind="delivery",
            reason=f"{type(exc).__name__}: {exc}",
        )


def intake_backlog() -> int:
    """Deliveries stored and not processed yet (health, metrics, the bench)."""
    return WebhookDelivery.objects.filter(
        source=WebhookSource.WHATSAPP, processed_at__isnull=True
    ).count()


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
    """Route a stored message through the routers the processes registered (onboarding's
    finds or starts its sender's run).

    Idempotent: only messages still ``received`` are routed; a failure leaves the message
    ``failed`` with the error as its note, for an operator to process again.
    """
    try:
        with transaction.atomic():
            message = InboundMessage.objects.select_for_update().get(pk=message_id)
            if message.status not in (InboundStatus.RECEIVED, InboundStatus.FAILED):
                return message
            status, note, company = routing.route(message)
            message.status, message.note, message.company = status, note, company
            message.processed_at = clock.now()
            message.save(update_fields=["status", "note", "company", "processed_at"])
            routing.routed(message)
            return message
    except Exception as exc:
        log.exception("inbound message %s could not be routed", message_id)
        InboundMessage.objects.filter(pk=message_id).update(
            status=InboundStatus.FAILED, note=f"{type(exc).__name__}: {exc}"[:2000]
        )
        return InboundMessage.objects.get(pk=message_id)


STALE_AFTER = timedelta(minutes=1)


def inbound_route_stale(*, older_than: timedelta = STALE_AFTER, limit: int = 200) -> int:
    """Route messages stored but never routed (the web process died between its commit
    and the on-commit routing). Run by beat; routing is idempotent, so a message the web
    process is routing right now is not routed twice.

    Messages never routed come first; then those a router held back (``processed_at`` set,
    still ``received``: over a rate cap), the longest-waiting first, so a flood of held
    messages neither starves a lost one nor has the same ones tried every minute."""
    cutoff = clock.now() - older_than
    stale = list(
        InboundMessage.objects.filter(status=InboundStatus.RECEIVED, received_at__lte=cutoff)
        .order_by(F("processed_at").asc(nulls_first=True), "received_at")
        .values_list("pk", flat=True)[:limit]
    )
    for message_id in stale:
        inbound_process(message_id)
    return len(stale)


# Namespace of the advisory locks below (any 32-bit number no other lock in the project uses).
PROVIDER_ID_LOCK = 0x57A7


def _lock_provider_id(provider_id: str) -> None:
    """Serialise, per provider id, a status's lookup with our send recording that id.

    Without it a status could miss the row being saved, and the save miss the status being
    kept, each invisible to the other's transaction.
    """
    advisory_xact_lock(PROVIDER_ID_LOCK, provider_id)


def _status_record(message: OutboundMessage, status: dict) -> bool:
    """Add a status to the message's history and move its status forward, never back (a
    late "sent" or "delivered" does not undo "read"). False for a status already recorded."""
    name = str(status.get("status"))
    errors = status.get("errors") or []
    errors = errors if isinstance(errors, list) else [errors]  # providers send a number or text too
    event = {"status": name, "timestamp": status.get("timestamp"), "errors": errors}
    if event in message.status_history:
        return False
    message.status_history = [*message.status_history, event]
    if name in STATUS_RANK and STATUS_RANK[name] > STATUS_RANK.get(message.status, 0):
        message.status = name
        message.status_updated_at = clock.now()
        if name == OutboundStatus.FAILED:
            message.error = "; ".join(
                str(e.get("title") or e) if isinstance(e, dict) else str(e) for e in errors
            )
    if name == OutboundStatus.FAILED and _refused_as_interactive(message, errors):
        transaction.on_commit(lambda: message_resend_as_text(message), robust=True)
    return True


def _refused_as_interactive(message: OutboundMessage, errors: list) -> bool:
    """The provider failed an interactive message of ours because the customer's client
    cannot show it (``INTERACTIVE_UNSUPPORTED_CODES``)."""
    if not message.options or message.as_text or message.template_name:
        return False
    codes = {str(e.get("code")) for e in errors if isinstance(e, dict)}
    return bool(codes & {str(code) for code in INTERACTIVE_UNSUPPORTED_CODES})


def message_resend_as_text(message: OutboundMessage) -> OutboundMessage:
    """Send a failed interactive message again as text, its options numbered, once (keyed
    ``<its key>:as-text``): the customer answers with the number or the option's title."""
    buttons, list_ = options_from_dict(message.options)
    return message_send(
        idempotency_key=f"{message.idempotency_key}:as-text"[:255],
        body=message.body,
        company=message.company,
        to_wa_id=message.to_wa_id,
        to_user_id=message.to_user_id,
        buttons=buttons,
        list_=list_,
        as_text=True,
        purpose=message.purpose,
        parameters={item["name"]: item["text"] for item in message.template_parameters or []},
    )


STATUS_FIELDS = ["status_history", "status", "status_updated_at", "error"]


def status_apply(
    status: dict, *, delivery: WebhookDelivery | None = None, where: str = ""
) -> OutboundMessage | None:
    """Move an outbound message's status forward (sent, delivered, read, failed).

    A status naming an id no message of ours has (yet) is kept as a PendingStatus, shown
    in the admin and applied by ``message_send`` when a message gets that id; returns None.
    """
    provider_id = str(status["id"])
    _lock_provider_id(provider_id)
    message = (
        OutboundMessage.objects.select_for_update().filter(provider_message_id=provider_id).first()
    )
    if message is None:
        timestamp = status.get("timestamp")
        PendingStatus.objects.get_or_create(
            provider_message_id=provider_id,
            status=safe_text(str(status.get("status")))[:32],
            timestamp=safe_text(str(timestamp))[:32] if timestamp not in (None, "") else "",
            defaults={
                "payload": status,
                "delivery": delivery,
                "where": where[:255],
                "received_at": clock.now(),
            },
        )
        log.info(
            "status %s for outbound message %s, not known yet: kept until a message gets that id",
            status.get("status"),
            provider_id,
        )
        return None
    if _status_record(message, status):
        message.save(update_fields=STATUS_FIELDS)
    return message


def _provider_order(pending: PendingStatus) -> tuple:
    """The provider's timestamp first (statuses arrive out of order), then arrival."""
    try:
        return (0, int(pending.timestamp), pending.pk)
    except ValueError:
        return (1, 0, pending.pk)


def pending_statuses_apply(message: OutboundMessage) -> int:
    """Apply the statuses kept for the message's provider id, in the provider's order; how many.

    Called with the provider-id lock held, in the transaction that records the id.
    """
    pending = sorted(
        PendingStatus.objects.select_for_update().filter(
            provider_message_id=message.provider_message_id, applied_at__isnull=True
        ),
        key=_provider_order,
    )
    if not pending:
        return 0
    for row in pending:
        _status_record(message, row.payload)
    message.save(update_fields=STATUS_FIELDS)
    PendingStatus.objects.filter(pk__in=[row.pk for row in pending]).update(
        applied_at=clock.now(), message=message
    )
    return len(pending)


def message_send(
    *,
    idempotency_key: str,
    body: str,
    company=None,
    to_wa_id: str = "",
    to_user_id: str = "",
    purpose: str = "",
    parameters: dict | None = None,
    buttons: tuple[ReplyButton, ...] = (),
    list_: OptionList | None = None,
    as_text: bool = False,
) -> OutboundMessage:
    """Send a message once per idempotency key: a step that runs again finds it sent.

    Free text inside the 24-hour customer-service window; outside it, the template
    configured for the message's ``purpose`` (the generic one for none), filled with
    ``parameters`` and the text itself (``body``). A crash after the provider accepted and
    before our row was updated can still send twice; the provider offers no idempotency
    key to close that gap.

    ``buttons`` (at most 3) or ``list_`` (at most 10 rows) go out as an interactive message
    inside the window; as numbered lines after the text outside it, with ``as_text``, or when
    the provider answers that the client cannot show them. Options beyond the provider's
    limits raise ValueError before anything is stored or sent.
    """
    if company is not None:
        to_wa_id, to_user_id = company.wa_id or "", company.user_id or ""
    interactive_check(
        Outgoing(
            to_wa_id=to_wa_id, to_user_id=to_user_id, body=body, buttons=tuple(buttons), list_=list_
        )
    )
    message, _ = OutboundMessage.objects.get_or_create(
        idempotency_key=idempotency_key,
        defaults={
            "company": company,
            "to_wa_id": to_wa_id,
            "to_user_id": to_user_id,
            "body": body,
            "purpose": purpose or templates.GENERIC,
            "options": options_as_dict(tuple(buttons), list_),
            "as_text": as_text,
            "backend": conf.setting("WHATSAPP_BACKEND", "console"),
            "created_at": clock.now(),
        },
    )
    if message.status != OutboundStatus.QUEUED:
        return message
    last = last_inbound_at(wa_id=to_wa_id, user_id=to_user_id)
    outside = last is None or clock.now() - last > CUSTOMER_SERVICE_WINDOW
    buttons, list_ = options_from_dict(message.options)
    outgoing = Outgoing(
        to_wa_id=to_wa_id,
        to_user_id=to_user_id,
        body=body,
        buttons=buttons,
        list_=list_,
        as_text=message.as_text,
    )
    if outside:
        template = templates.template_for(message.purpose)
        outgoing.template_name, outgoing.template_language = template.name, template.language
        # The text with its options, if any, numbered on one line: a template has no buttons.
        outgoing.template_parameters = template.values(
            {**(parameters or {}), "body": outgoing.text()}
        )
        outgoing.template_named = template.named
    backend = get_backend()
    try:
        provider_id = backend.send(outgoing, idempotency_key=idempotency_key)
    except InteractiveUnsupported:
        log.info(
            "message %s: the client cannot show buttons or a list; sent as text", idempotency_key
        )
        outgoing.as_text = message.as_text = True
        provider_id = backend.send(outgoing, idempotency_key=idempotency_key)
    message.provider_message_id, message.template_name = provider_id, outgoing.template_name
    message.template_language = outgoing.template_language
    message.template_parameters = [
        {"name": name, "text": text} for name, text in outgoing.template_parameters
    ]
    message.status, message.sent_at = OutboundStatus.SENT, clock.now()
    with transaction.atomic():
        if provider_id:
            _lock_provider_id(str(provider_id))
        message.save(
            update_fields=[
                "provider_message_id",
                "template_name",
                "template_language",
                "template_parameters",
                "as_text",
                "status",
                "sent_at",
            ]
        )
        if provider_id:
            pending_statuses_apply(message)  # the provider may have reported on it already
    return message


def question_answer(question: OutboundMessage) -> bool:
    """Mark a question of ours (a message with options) answered, once: False when it already
    was, so a second tap or a late reply to it changes nothing."""
    return (
        OutboundMessage.objects.filter(pk=question.pk, answered_at__isnull=True).update(
            answered_at=clock.now()
        )
        == 1
    )


# A stored file's extension comes from its first bytes, never from a MIME type the
# customer's message claims: a file is stored as what it is, or as ``.bin``.
MAGIC_EXTENSIONS = [(b"%PDF-", ".pdf"), (b"\xff\xd8\xff", ".jpg"), (b"\x89PNG\r\n\x1a\n", ".png")]


def stored_extension(content: bytes) -> str:
    return next(
        (extension for magic, extension in MAGIC_EXTENSIONS if content.startswith(magic)), ".bin"
    )


DETECTED_TYPES = {".pdf": "application/pdf", ".jpg": "image/jpeg", ".png": "image/png"}
