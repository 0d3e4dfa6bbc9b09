"""The WhatsApp channel's part of ``manage.py durable health``: templates Meta stopped, and
an account Meta restricted or disabled, mean messages outside the 24-hour window fail."""

from durable.surfaces.health import Check
from processes.whatsapp import templates
from processes.whatsapp.selectors import account_state, templates_blocked


def templates_health() -> Check:
    blocked = templates_blocked()
    if blocked:
        return Check(
            "whatsapp templates",
            False,
            "; ".join(
                f"{row.name} ({row.language}) is {row.status}"
                + (f": {row.reason}" if row.reason else "")
                for row in blocked
            ),
        )
    return Check(
        "whatsapp templates",
        True,
        f"{len(templates.configured_pairs())} configured, none rejected, paused or disabled",
    )


def account_health() -> Check:
    state = account_state()
    if state.restricted or state.disabled:
        return Check("whatsapp account", False, state.detail)
    return Check("whatsapp account", True, "neither restricted nor disabled")


def whatsapp_health() -> list[Check]:
    return [templates_health(), account_health()]
