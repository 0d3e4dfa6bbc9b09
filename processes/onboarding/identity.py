"""WhatsApp's notices about a customer's identity: a new number moves their company to it, a
changed identity is a finding on their open case. Nothing here writes to the customer."""

from approvals import services as approvals
from approvals.selectors import approvals_open_of_run
from processes.onboarding.findings import finding
from processes.onboarding.models import Company
from processes.onboarding.recheck import company_cases_recheck
from processes.whatsapp.models import InboundMessage, InboundStatus

# ``system.type`` of the notices read here (the Cloud API's names, and the On-Premises API's
# older ones); any other notice is kept for an operator.
NUMBER_CHANGED = {"user_changed_number", "customer_changed_number"}
IDENTITY_CHANGED = {"customer_identity_changed", "user_identity_changed", "identity_change"}
USER_ID_CHANGED = {"user_changed_user_id"}
ACTOR = "system (WhatsApp notice)"
IDENTITY_CHECK = "WhatsApp identity"


def notice_of(message: InboundMessage) -> dict:
    notice = message.payload["message"].get("system")
    return notice if isinstance(notice, dict) else {}


def new_number_of(notice: dict) -> str:
    """The number the customer moved to (``wa_id``; ``new_wa_id`` in older payloads), digits
    only, or "" when the notice gives none that could be one."""
    number = str(notice.get("wa_id") or notice.get("new_wa_id") or "").strip()
    return number if number.isdigit() and len(number) <= 128 else ""


def notice_route(
    message: InboundMessage, company: Company | None
) -> tuple[str, str, Company | None]:
    """(status, note, company) for a ``system`` message; ``company`` is the sender's (its row
    locked by ``company_for_sender``). A notice never starts an application and is never
    answered."""
    kind = str(notice_of(message).get("type") or "")[:64]
    if kind in NUMBER_CHANGED:
        return number_change_apply(message, company)
    if kind in IDENTITY_CHANGED:
        return identity_change_record(message, company)
    if kind in USER_ID_CHANGED:
        return user_id_change_apply(message, company)
    note = f"a notice from WhatsApp (system, {kind or 'no type'}): kept for an operator"
    return InboundStatus.UNSUPPORTED, note, company


def number_change_apply(
    message: InboundMessage, company: Company | None
) -> tuple[str, str, Company | None]:
    """The customer now writes from another number: their company moves to it (the old one
    kept as ``former_wa_id``), so what they send from it joins their application and every
    reply goes there; a case open now is re-checked, which the reviewer reads in its trail.

    Two companies are never merged: when the new number already has a company of its own,
    the notice waits for an operator and both stay as they are."""
    old, new = message.sender_wa_id, new_number_of(notice_of(message))
    if not new:
        return (
            InboundStatus.UNMATCHED,
            "a number change naming no new number: kept for an operator",
            company,
        )
    if company is None:
        return (
            InboundStatus.UNMATCHED,
            f"a number change from {old or message.sender_user_id} to {new}, "
            f"but no company has that number: kept for an operator",
            None,
        )
    if company.wa_id == new:
        return InboundStatus.KEPT, f"a number change to {new}: the company already has it", company
    holder = Company.objects.filter(wa_id=new).exclude(pk=company.pk).first()
    if holder is not None:
        return (
            InboundStatus.UNMATCHED,
            f"a number change from {company.wa_id} to {new}, but {new} is "
            f"company {holder.customer_id}'s ({holder.get_status_display()}): "
            "not merged, kept for an operator",
            company,
        )
    company.former_wa_id, company.wa_id = company.wa_id or "", new
    changed = ["former_wa_id", "wa_id"]
    # A new number comes with a new user id (Meta's notice names it): taken unless another has it.
    user_id = new_user_id_of(notice_of(message))
    if (
        user_id
        and user_id != company.user_id
        and not Company.objects.filter(user_id=user_id).exists()
    ):
        company.former_user_id, company.user_id = company.user_id or "", user_id
        changed += ["former_user_id", "user_id"]
    company.save(update_fields=[*changed, "updated_at"])
    note = f"number changed from {company.former_wa_id or '(none)'} to {new}: replies go to {new}"
    reason = (
        "WhatsApp reports the customer changed number "
        f"from {company.former_wa_id or '(none)'} to {new}"
    )
    if company_cases_recheck(company, actor=ACTOR, reason=reason):
        note += ", open case re-checked"
    return InboundStatus.KEPT, note, company


def new_user_id_of(notice: dict) -> str:
    """The business-scoped user id the customer has now, or "" when the notice gives none that
    could be one (ids are stored whole or not at all)."""
    return _user_id(notice.get("user_id"))


def _user_id(value) -> str:
    return value if isinstance(value, str) and 0 < len(value) <= 128 and value.isprintable() else ""


def user_id_change_apply(
    message: InboundMessage, company: Company | None
) -> tuple[str, str, Company | None]:
    """WhatsApp gave the customer a new business-scoped user id: their company (known by the
    old one, or by the number) takes it, the old one kept as ``former_user_id``, so messages
    carrying it join their application; a case open now is re-checked. Two companies are
    never merged: when the new id is already another company's, an operator decides."""
    notice = notice_of(message)
    old, new = (
        _user_id(notice.get("previous_user_id")) or message.sender_user_id,
        new_user_id_of(notice),
    )
    if not new:
        return (
            InboundStatus.UNMATCHED,
            "a user id change naming no new user id: kept for an operator",
            company,
        )
    if company is None and old:  # Meta's notice carries no phone: the company is the old id's
        company = Company.objects.select_for_update().filter(user_id=old).first()
    if company is None:
        return (
            InboundStatus.UNMATCHED,
            f"a user id change from {old or message.sender_wa_id} to {new}, but no "
            "company has that identity: kept for an operator",
            None,
        )
    if company.user_id == new:
        return InboundStatus.KEPT, f"a user id change to {new}: the company already has it", company
    holder = Company.objects.filter(user_id=new).exclude(pk=company.pk).first()
    if holder is not None:
        return (
            InboundStatus.UNMATCHED,
            f"a user id change from {company.user_id or '(none)'} to {new}, but "
            f"{new} is company {holder.customer_id}'s "
            f"({holder.get_status_display()}): not merged, kept for an operator",
            company,
        )
    company.former_user_id, company.user_id = company.user_id or "", new
    company.save(update_fields=["former_user_id", "user_id", "updated_at"])
    note = f"user id changed from {company.former_user_id or '(none)'} to {new}"
    reason = (
        "WhatsApp reports the customer's user id changed "
        f"from {company.former_user_id or '(none)'} to {new}"
    )
    if company_cases_recheck(company, actor=ACTOR, reason=reason):
        note += ", open case re-checked"
    return InboundStatus.KEPT, note, company


def identity_change_record(
    message: InboundMessage, company: Company | None
) -> tuple[str, str, Company | None]:
    """WhatsApp reports that the customer's identity changed (a new phone, a reinstall, or
    someone else on the number): a finding on each case open now, for the reviewer to weigh.
    Nothing else changes; with no open case the notice waits for an operator."""
    cases = list(approvals_open_of_run(company.run_id)) if company is not None else []
    if not cases:
        return (
            InboundStatus.UNMATCHED,
            "an identity change with no open case: kept for an operator",
            company,
        )
    for case in cases:
        approvals.approval_finding_add(
            case.pk,
            actor=ACTOR,
            finding=finding(IDENTITY_CHECK, "identity_changed"),
            reason=message.wamid,
        )  # an id: the finding says what happened
    return (
        InboundStatus.KEPT,
        "an identity change: a finding on case " + ", ".join(f"#{case.pk}" for case in cases),
        company,
    )
