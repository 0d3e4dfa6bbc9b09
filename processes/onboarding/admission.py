"""How fast new customers may start: at most so many new senders an hour overall, and so
many applications a day from one number, so a flood of first messages (a fuzzer, a leaked
or scraped number) cannot create companies and runs without bound.

Over a cap the message is not refused: it stays ``received`` with the reason as its note,
and the beat's sweep of unrouted messages (``inbound_route_stale``, each minute) routes it
again once the window has room. Nothing is lost; a flood is only slowed.
"""

from datetime import timedelta

from django.utils import timezone

from durable import clock, selectors
from processes import conf
from processes.onboarding.models import Company

HOUR, DAY = timedelta(hours=1), timedelta(days=1)


def new_senders_per_hour() -> int:
    return int(conf.setting("ONBOARDING_NEW_SENDERS_PER_HOUR", 120))


def applications_per_number_per_day() -> int:
    return int(conf.setting("ONBOARDING_APPLICATIONS_PER_NUMBER_PER_DAY", 3))


def new_sender_refusal() -> str:
    """Why a message from an unknown number may not create its company now ('' if it may)."""
    cap = new_senders_per_hour()
    # Counted up to the cap, from the index on created_at: the same answer, and a hot hour
    # of new senders costs no more than a quiet one (auto_now_add's clock).
    recent = Company.objects.filter(created_at__gte=timezone.now() - HOUR)
    if cap <= 0 or recent[:cap].count() >= cap:
        return (
            f"held: {cap} new senders in the last hour "
            "(ONBOARDING_NEW_SENDERS_PER_HOUR); routed again later"
        )
    return ""


def new_application_refusal(company: Company) -> str:
    """Why this number may not start one more application now ('' if it may): its last
    applications' runs started within a day, counted in one query."""
    cap = applications_per_number_per_day()
    last = (
        company.run_id_of(n)
        for n in range(company.application, max(company.application - cap, 0), -1)
    )
    if selectors.runs_started_since(last, clock.now() - DAY) >= cap:
        return (
            f"held: {cap} applications from this number in a day "
            f"(ONBOARDING_APPLICATIONS_PER_NUMBER_PER_DAY); routed again later"
        )
    return ""
