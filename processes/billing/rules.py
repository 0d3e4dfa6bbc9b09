"""Billing's rules for what an operator may ask, shared by the services, the run's steps and
every surface (admin, API, command), so each says the same thing."""

from datetime import datetime, timedelta

from durable import clock

# A due date beyond this is a typing slip, not a renegotiation (and year 9999 breaks pages).
LATEST_DUE = timedelta(days=2 * 366)
# How long an operator's surface waits for the invoice's run to answer before saying the
# change is stored and will still be applied.
OPERATOR_WAIT_SECONDS = 5.0
REASON_MAX = 500

DUE_NOT_AN_INSTANT = "a due date is a date and time with its time zone"
DUE_IN_THE_PAST = "the new due date must be in the future"
DUE_TOO_FAR = "the new due date must be within two years"


def due_at_problem(due_at) -> str | None:
    """Why ``due_at`` cannot be an invoice's new due date, or None."""
    if not isinstance(due_at, datetime) or due_at.tzinfo is None:
        return DUE_NOT_AN_INSTANT
    now = clock.now()
    if due_at <= now:
        return DUE_IN_THE_PAST
    if due_at > now + LATEST_DUE:
        return DUE_TOO_FAR
    return None


def due_at_from_text(text: str) -> datetime:
    """An operator's ISO 8601 due date, or ValueError saying what is wrong with it."""
    try:
        due_at = datetime.fromisoformat(text)
    except (TypeError, ValueError):
        raise ValueError("an ISO 8601 date and time, e.g. 2027-02-01T12:00:00-03:00") from None
    problem = due_at_problem(due_at)
    if problem:
        raise ValueError(problem)
    return due_at
