"""Deadlines that move the workflow (a supervisor's extension) and follow-up dates that hide a
case."""

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from approvals import selectors, services
from approvals.errors import InvalidDate, NotAllowed, ReasonRequired
from approvals.models import ApprovalStatus
from approvals.workflow import expire_approval_request
from durable import days
from durable.models import RunStatus
from durable.testing import drive
from tests.approvals.test_views import signed_in

pytestmark = pytest.mark.django_db


def test_an_extended_deadline_keeps_the_case_open_past_the_old_one(junior_case, supervisor, clock):
    services.approval_extend_deadline(
        junior_case.pk,
        actor=supervisor,
        due_at=junior_case.due_at + days(2),
        reason="customer travelling",
    )
    drive(junior_case.run_id)

    clock.advance(days(3) + timedelta(minutes=1))
    run = drive(junior_case.run_id)

    junior_case.refresh_from_db()
    assert (junior_case.status, run.status) == (ApprovalStatus.PENDING, RunStatus.WAITING)


def test_an_extended_case_expires_at_its_new_deadline(junior_case, supervisor, clock):
    services.approval_extend_deadline(
        junior_case.pk,
        actor=supervisor,
        due_at=junior_case.due_at + days(2),
        reason="customer travelling",
    )
    drive(junior_case.run_id)
    clock.advance(days(3) + timedelta(minutes=1))
    drive(junior_case.run_id)

    clock.advance(days(2))
    run = drive(junior_case.run_id)

    junior_case.refresh_from_db()
    assert (junior_case.status, run.result) == (ApprovalStatus.EXPIRED, "expired")


def test_a_case_extended_twice_honours_the_latest_deadline(junior_case, supervisor, clock):
    for extra in (days(1), days(4)):
        services.approval_extend_deadline(
            junior_case.pk,
            actor=supervisor,
            due_at=junior_case.due_at + extra,
            reason="still waiting",
        )
        drive(junior_case.run_id)

    clock.advance(days(3) + days(1) + timedelta(minutes=1))
    run = drive(junior_case.run_id)

    assert run.status == RunStatus.WAITING and run.wake_at == junior_case.due_at + days(4)


def test_a_decision_after_an_extension_still_resumes_the_run(
    junior_case, supervisor, junior, clock
):
    services.approval_extend_deadline(
        junior_case.pk,
        actor=supervisor,
        due_at=junior_case.due_at + days(2),
        reason="customer travelling",
    )
    drive(junior_case.run_id)
    clock.advance(days(4))

    services.approval_decide(junior_case.pk, actor=junior, outcome="approve")
    run = drive(junior_case.run_id)

    assert (run.status, run.result) == (RunStatus.COMPLETED, "approve")


def test_an_extension_is_audited_with_the_old_and_new_deadline_and_its_reason(
    junior_case, supervisor
):
    new = junior_case.due_at + days(2)

    case = services.approval_extend_deadline(
        junior_case.pk, actor=supervisor, due_at=new, reason="bank strike"
    )

    row = case.audit.get(action="extend_deadline")
    assert (row.actor, row.reason) == ("sofia", "bank strike")
    assert row.detail == {"from": junior_case.due_at.isoformat(), "to": new.isoformat()}


def test_an_extension_to_an_earlier_date_is_refused(junior_case, supervisor):
    with pytest.raises(InvalidDate, match="later than the current one"):
        services.approval_extend_deadline(
            junior_case.pk, actor=supervisor, due_at=junior_case.due_at, reason="oops"
        )


def test_an_extension_needs_a_reason(junior_case, supervisor):
    with pytest.raises(ReasonRequired):
        services.approval_extend_deadline(
            junior_case.pk, actor=supervisor, due_at=junior_case.due_at + days(1), reason=""
        )


def test_a_reviewer_may_not_extend_a_deadline(junior_case, junior):
    with pytest.raises(NotAllowed):
        services.approval_extend_deadline(
            junior_case.pk,
            actor=junior,
            due_at=junior_case.due_at + days(1),
            reason="more time please",
        )


def test_the_expiry_step_finds_a_deadline_moved_in_the_instant_the_wait_timed_out(
    junior_case, supervisor, clock
):
    new = junior_case.due_at + days(1)
    services.approval_extend_deadline(
        junior_case.pk, actor=supervisor, due_at=new, reason="late letter"
    )
    clock.advance(days(3))

    expiry = expire_approval_request(junior_case.pk, True)

    junior_case.refresh_from_db()
    assert (expiry.expired, expiry.due_at, junior_case.status) == (
        False,
        new,
        ApprovalStatus.PENDING,
    )


def test_the_extend_form_takes_a_local_date_and_time(junior_case, supervisor):
    new = junior_case.due_at + days(2)
    typed = timezone.localtime(
        new, ZoneInfo(settings.REVIEWER_TIME_ZONE)
    )  # as the workbench shows times

    response = signed_in(supervisor).post(
        reverse("approval_extend", args=[junior_case.pk]),
        {"due_at": f"{typed:%Y-%m-%dT%H:%M}", "reason": "customer travelling"},
    )

    junior_case.refresh_from_db()
    assert response.status_code == 302
    assert junior_case.due_at == new.replace(second=0, microsecond=0)


@pytest.mark.parametrize("typed", ["next tuesday", "2026-13-01T10:00"])
def test_a_malformed_date_is_a_400_naming_the_format(junior_case, supervisor, typed):
    response = signed_in(supervisor).post(
        reverse("approval_extend", args=[junior_case.pk]),
        {"due_at": typed, "reason": "customer travelling"},
    )

    assert response.status_code == 400
    assert "YYYY-MM-DD HH:MM" in response.content.decode()


# --- follow-up dates ---


def test_a_follow_up_date_hides_the_case_from_the_queue_until_then(junior_case, junior, clock):
    services.approval_follow_up(
        junior_case.pk,
        actor=junior,
        until=clock.now() + days(1),
        reason="waiting for the customer's bank letter",
    )
    hidden = list(selectors.approvals_open_for(junior))

    clock.advance(days(1))

    assert (hidden, list(selectors.approvals_open_for(junior))) == ([], [junior_case])


def test_a_case_waiting_on_a_follow_up_is_listed_under_that_filter(junior_case, junior, clock):
    services.approval_follow_up(
        junior_case.pk,
        actor=junior,
        until=clock.now() + days(1),
        reason="waiting for the customer's bank letter",
    )

    assert list(selectors.approvals_open_for(junior, following_up=True)) == [junior_case]


def test_a_follow_up_does_not_move_the_deadline(junior_case, junior, clock):
    services.approval_follow_up(
        junior_case.pk,
        actor=junior,
        until=clock.now() + days(5),
        reason="waiting for the customer's bank letter",
    )

    clock.advance(days(3))
    run = drive(junior_case.run_id)

    assert run.result == "expired"


def test_a_follow_up_in_the_past_is_refused(junior_case, junior, clock):
    with pytest.raises(InvalidDate):
        services.approval_follow_up(
            junior_case.pk, actor=junior, until=clock.now() - days(1), reason="late"
        )


def test_a_follow_up_is_audited_with_its_date_and_reason(junior_case, junior, clock):
    until = clock.now() + days(1)

    case = services.approval_follow_up(
        junior_case.pk, actor=junior, until=until, reason="bank letter"
    )

    row = case.audit.get(action="follow_up")
    assert (row.actor, row.reason, row.detail["until"]) == (
        "joana",
        "bank letter",
        until.isoformat(),
    )


def test_clearing_a_follow_up_puts_the_case_back_in_the_queue(junior_case, junior, clock):
    services.approval_follow_up(
        junior_case.pk, actor=junior, until=clock.now() + days(1), reason="bank letter"
    )

    response = signed_in(junior).post(
        reverse("approval_follow_up", args=[junior_case.pk]), {"clear": "1"}
    )

    assert response.status_code == 302
    assert list(selectors.approvals_open_for(junior)) == [junior_case]


# --- dates far ahead (year 9999 in São Paulo is year 10000 in UTC: unreadable once stored) ---

FAR_AHEAD = {"the last minute a form can type": "9999-12-31T23:59", "a year and a day ahead": None}


@pytest.mark.parametrize("typed", FAR_AHEAD.values(), ids=FAR_AHEAD.keys())
@pytest.mark.parametrize(
    "url, field, who",
    [("approval_follow_up", "follow_up_at", "junior"), ("approval_extend", "due_at", "supervisor")],
    ids=["follow-up", "extend"],
)
def test_a_date_beyond_a_year_is_a_400_and_the_case_still_opens_for_everyone(
    junior_case, junior, supervisor, clock, url, field, who, typed
):
    user = {"junior": junior, "supervisor": supervisor}[who]
    due_at = junior_case.due_at
    typed = typed or f"{timezone.localtime(clock.now() + days(367)):%Y-%m-%dT%H:%M}"

    response = signed_in(user).post(
        reverse(url, args=[junior_case.pk]), {field: typed, "reason": "later"}
    )

    junior_case.refresh_from_db()
    assert response.status_code == 400
    assert (junior_case.follow_up_at, junior_case.due_at) == (None, due_at)
    for reader in (junior, supervisor):
        assert (
            signed_in(reader).get(reverse("approval_case", args=[junior_case.pk])).status_code
            == 200
        )


def test_a_follow_up_a_year_ahead_is_still_taken(junior_case, junior, clock):
    case = services.approval_follow_up(
        junior_case.pk,
        actor=junior,
        until=clock.now() + days(365),
        reason="the customer's annual audit",
    )

    assert case.follow_up_at == clock.now() + days(365)


def test_the_team_page_and_the_case_page_show_a_claim_at_the_same_time(
    junior_case, junior, supervisor
):
    from django.utils import formats

    services.approval_claim(junior_case.pk, actor=junior)
    junior_case.refresh_from_db()
    shown = formats.date_format(
        timezone.localtime(junior_case.claimed_at, ZoneInfo(settings.REVIEWER_TIME_ZONE)),
        "SHORT_DATETIME_FORMAT",
    )

    team = signed_in(supervisor).get(reverse("approval_team")).content.decode()
    case = (
        signed_in(supervisor).get(reverse("approval_case", args=[junior_case.pk])).content.decode()
    )

    assert shown in team and shown in case


def test_an_overdue_case_cannot_be_extended_to_a_moment_already_past(
    junior_case, supervisor, clock
):
    due_at = junior_case.due_at
    clock.advance(days(3) + days(1))  # overdue; its run has not expired it yet

    response = signed_in(supervisor).post(
        reverse("approval_extend", args=[junior_case.pk]),
        {
            "due_at": f"{timezone.localtime(due_at + timedelta(hours=12)):%Y-%m-%dT%H:%M}",
            "reason": "bank strike",
        },
    )

    junior_case.refresh_from_db()
    assert response.status_code == 400
    assert junior_case.due_at == due_at
