"""The reviewer pages over HTTP: who gets in, CSRF, errors as 4xx with their message."""

import pytest
from django.test import Client
from django.urls import reverse

from approvals import services
from approvals.models import ApprovalRequest, ApprovalStatus
from approvals.panels import Section, register_case_panel, unregister_case_panel
from durable.models import Signal
from tests.approvals.conftest import start_case

pytestmark = pytest.mark.django_db


def signed_in(user, **options) -> Client:
    client = Client(**options)
    client.force_login(user)
    return client


def test_the_root_lands_on_the_queue_and_asks_strangers_to_sign_in(client):
    assert client.get("/").url == reverse("approval_queue")

    response = client.get(reverse("approval_queue"))

    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_the_queue_lists_open_cases_soonest_deadline_first_with_a_countdown(ana, clock):
    later = start_case("later")
    clock.advance(60)
    sooner = start_case("sooner")
    ApprovalRequest.objects.filter(pk=sooner.pk).update(due_at=later.due_at.replace(year=2000))

    page = signed_in(ana).get(reverse("approval_queue")).content.decode()

    assert page.index(f'data-case="{sooner.pk}"') < page.index(f'data-case="{later.pk}"')
    assert "overdue by" in page and "due in 2d 23h" in page


def test_the_queue_filters_by_risk(ana, case, high_risk_case):
    page = signed_in(ana).get(reverse("approval_queue"), {"risk": "high"}).content.decode()

    assert f'data-case="{high_risk_case.pk}"' in page
    assert f'data-case="{case.pk}"' not in page


@pytest.mark.parametrize(
    "name, method",
    [
        ("approval_queue", "get"),
        ("approval_mine", "get"),
        ("approval_archive", "get"),
        ("approval_case", "get"),
        ("approval_claim", "post"),
        ("approval_decide", "post"),
    ],
)
def test_users_outside_compliance_get_403_everywhere(outsider, case, name, method):
    args = [] if name in ("approval_queue", "approval_mine", "approval_archive") else [case.pk]

    response = getattr(signed_in(outsider), method)(
        reverse(name, args=args), {"outcome": "approve"}
    )

    assert response.status_code == 403
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING


def test_a_decision_without_a_csrf_token_is_refused(ana, case):
    client = signed_in(ana, enforce_csrf_checks=True)

    response = client.post(reverse("approval_decide", args=[case.pk]), {"outcome": "approve"})

    assert response.status_code == 403
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING


def test_rejecting_without_a_reason_shows_the_error_and_keeps_the_case_open(ana, case):
    response = signed_in(ana).post(
        reverse("approval_decide", args=[case.pk]), {"outcome": "reject"}
    )

    assert response.status_code == 400
    assert "Give a reason to reject" in response.content.decode()
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING


def test_approving_redirects_to_the_read_only_case(ana, case):
    client = signed_in(ana)

    response = client.post(reverse("approval_decide", args=[case.pk]), {"outcome": "approve"})
    page = client.get(response.url).content.decode()

    assert response.status_code == 302
    assert f"You approved case #{case.pk} (1 of 1). The process resumes." in page
    assert "This case was approved by ana" in page and "already" not in page  # not a lost race
    assert reverse("approval_decide", args=[case.pk]) not in page


def test_a_second_reviewer_deciding_a_decided_case_gets_409_naming_who_decided(ana, bruno, case):
    signed_in(ana).post(reverse("approval_decide", args=[case.pk]), {"outcome": "approve"})

    response = signed_in(bruno).post(
        reverse("approval_decide", args=[case.pk]), {"outcome": "reject", "reason": "no"}
    )

    assert response.status_code == 409
    assert "already approved by ana" in response.content.decode()
    assert Signal.objects.filter(run_id=case.run_id).count() == 1


def test_claim_then_my_cases_then_release(ana, case):
    client = signed_in(ana)

    client.post(reverse("approval_claim", args=[case.pk]))
    mine = client.get(reverse("approval_mine")).content.decode()
    client.post(reverse("approval_release", args=[case.pk]))

    assert f'data-case="{case.pk}"' in mine
    case.refresh_from_db()
    assert case.status == ApprovalStatus.PENDING


def test_the_archive_finds_decided_cases_by_reviewer(ana, case, high_risk_case):
    client = signed_in(ana)
    client.post(reverse("approval_decide", args=[case.pk]), {"outcome": "approve"})

    page = client.get(reverse("approval_archive"), {"q": "ana"}).content.decode()

    assert f'data-case="{case.pk}"' in page
    assert f'data-case="{high_risk_case.pk}"' not in page


def test_the_case_page_shows_summary_findings_timeline_and_registered_panels(ana, case):
    def company_panel(approval_request):
        return [
            Section(
                "Company",
                "approvals/panels/summary.html",
                {"facts": [("legal name", f"{approval_request.subject_id} Ltda")]},
            )
        ]

    def broken_panel(approval_request):
        raise RuntimeError("documents store is down")

    register_case_panel("approval_test", company_panel)
    register_case_panel("approval_test", broken_panel)
    try:
        page = signed_in(ana).get(reverse("approval_case", args=[case.pk])).content.decode()
    finally:
        unregister_case_panel("approval_test", company_panel)
        unregister_case_panel("approval_test", broken_panel)

    for text in [
        "Summary",
        "Validator findings",
        "Process timeline",
        "open_approval_request",
        "acme Ltda",
        "broken panel",
        "could not be shown",
    ]:
        assert text in page


def test_the_admin_shows_a_case_with_its_read_only_audit_trail(admin_client, case, ana):
    signed_in(ana).post(reverse("approval_decide", args=[case.pk]), {"outcome": "approve"})

    changelist = admin_client.get(reverse("admin:approvals_approvalrequest_changelist"))
    change = admin_client.get(reverse("admin:approvals_approvalrequest_change", args=[case.pk]))

    assert changelist.status_code == change.status_code == 200
    assert "approved" in change.content.decode()
    assert admin_client.get(reverse("admin:approvals_approvalaudit_add")).status_code == 403


def _live_url(page: str) -> str:
    import html
    import re

    return html.unescape(re.search(r'id="case-live" hx-get="([^"]+)"', page).group(1))


def test_the_live_poll_answers_204_while_nothing_changed(ana, case):
    client = signed_in(ana)
    live = _live_url(client.get(reverse("approval_case", args=[case.pk])).content.decode())

    response = client.get(live)

    assert response.status_code == 204


def test_the_live_poll_sends_the_decision_panel_again_only_when_the_case_moved(ana, bruno, case):
    from approvals import services

    client = signed_in(ana)
    live = _live_url(client.get(reverse("approval_case", args=[case.pk])).content.decode())
    services.approval_claim(case.pk, actor=bruno)

    fragment = client.get(live).content.decode()

    assert (
        'id="case-decide" hx-swap-oob="outerHTML"' in fragment
        and "Claimed by <strong>bruno</strong>" in fragment
    )
    assert (
        'id="section-process-timeline" data-section="process-timeline" hx-swap-oob="outerHTML"'
        in fragment
    )


def test_the_live_poll_is_for_reviewers_only(outsider, case):
    response = signed_in(outsider).get(reverse("approval_case_live", args=[case.pk]))

    assert response.status_code == 403


def test_after_a_decision_next_case_opens_the_next_of_the_reviewers_queue(ana, bruno):
    first, second, third = start_case("acme"), start_case("globex"), start_case("initech")
    services.approval_claim(third.pk, actor=bruno)  # a colleague holds this one
    client = signed_in(ana)
    client.post(reverse("approval_decide", args=[first.pk]), {"outcome": "approve"})

    page = client.get(reverse("approval_case", args=[first.pk])).content.decode()
    following = client.get(reverse("approval_next") + f"?after={first.pk}")

    assert 'data-testid="next-case"' in page
    assert following.status_code == 302 and following["Location"] == reverse(
        "approval_case", args=[second.pk]
    )


def test_next_case_with_nothing_left_goes_back_to_the_queue_saying_so(ana):
    case = start_case("acme")

    response = signed_in(ana).get(reverse("approval_next") + f"?after={case.pk}", follow=True)

    assert response.redirect_chain[-1][0] == reverse("approval_queue")
    assert "No other case waits for you." in response.content.decode()


def test_a_reviewer_leaves_an_internal_note_that_is_audited_and_shown_to_colleagues(ana, bruno):
    from approvals.models import ApprovalAudit

    case = start_case("acme")

    response = signed_in(ana).post(
        reverse("approval_note", args=[case.pk]),
        {"reason": "Liguei para o cliente: o contrato novo chega amanhã."},
    )
    page = signed_in(bruno).get(reverse("approval_case", args=[case.pk])).content.decode()

    assert response.status_code == 302
    note = ApprovalAudit.objects.get(request=case, action="note")
    assert (note.actor, note.reason) == (
        "ana",
        "Liguei para o cliente: o contrato novo chega amanhã.",
    )
    notes = page[page.index('data-testid="notes"') :]
    assert "Liguei para o cliente" in notes[: notes.index("</section>")]
    assert not Signal.objects.filter(run_id=case.run_id).exists()  # nothing reaches the process


def test_an_empty_note_is_refused(ana):
    from approvals.models import ApprovalAudit

    case = start_case("acme")

    empty = signed_in(ana).post(reverse("approval_note", args=[case.pk]), {"reason": "  "})

    assert empty.status_code == 400
    assert not ApprovalAudit.objects.filter(request=case, action="note").exists()


def test_a_reviewer_outside_a_senior_case_may_not_write_on_it(junior, senior_case):
    from approvals.models import ApprovalAudit

    response = signed_in(junior).post(
        reverse("approval_note", args=[senior_case.pk]), {"reason": "hm"}
    )

    assert response.status_code == 403
    assert not ApprovalAudit.objects.filter(request=senior_case, action="note").exists()


def test_no_workbench_page_may_be_kept_by_a_browser_or_a_proxy(ana, supervisor):
    case = start_case()
    pages = {
        signed_in(ana): [
            "/approvals/",
            f"/approvals/{case.pk}/",
            "/approvals/mine/",
            "/approvals/archive/",
        ],
        signed_in(supervisor): [
            "/approvals/team/",
            "/approvals/dashboard/",
            f"/approvals/{case.pk}/",
        ],
    }

    answers = {
        path: (response.status_code, "no-store" in response.get("Cache-Control", ""))
        for client, paths in pages.items()
        for path in paths
        for response in [client.get(path)]
    }

    assert set(answers.values()) == {(200, True)}
