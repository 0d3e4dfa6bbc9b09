"""The compliance reviewer's pages: queue, my cases, archive, case page and its actions, and
the supervisor's team page, dashboard and actions.

Thin: every write goes through approvals.services, every read through selectors. Only
reviewers (the decide permission) and supervisors get in; anyone else signed in gets 403,
and so does a reviewer opening a case routed to groups they are not in. The auditors get
one page: a decided case's evidence pack.
"""

import functools
import hashlib
from datetime import UTC

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import formats, timezone
from django.utils.cache import add_never_cache_headers
from django.utils.dateparse import parse_datetime
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views import View

from approvals import figures, selectors, services
from approvals.customer_messages import (
    customer_message_choices,
    customer_message_compose,
    reason_choices,
    reason_compose,
)
from approvals.duties import approval_conflict
from approvals.errors import (
    ApprovalError,
    ApprovalNotFound,
    InvalidDate,
    NotAllowed,
    NotEligible,
    ReviewerRequired,
)
from approvals.holds import holds_on
from approvals.models import CLOSED_STATUSES, WITH_DECISION_STATUSES, ApprovalStatus, Outcome, Risk
from approvals.panels import sections_for
from durable import clock

PAGE_SIZE = 50


class NeverStored(View):
    """Workbench pages show customers' cases: no browser or proxy keeps a copy (a shared
    computer's back button, a proxy's cache), as the documents already answer."""

    def dispatch(self, request, *args, **kwargs):
        response = super().dispatch(request, *args, **kwargs)
        add_never_cache_headers(response)
        return response


class ReviewerView(LoginRequiredMixin, NeverStored):
    """Anonymous -> login page; signed in without the decide permission (nor a supervisor) ->
    403."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not (
            services.is_reviewer(request.user) or services.is_supervisor(request.user)
        ):
            raise PermissionDenied(_("Only compliance reviewers may see approval requests."))
        return super().dispatch(request, *args, **kwargs)


class SupervisorView(LoginRequiredMixin, NeverStored):
    """The compliance-supervisor group only; anyone else signed in -> 403."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not services.is_supervisor(request.user):
            raise PermissionDenied(_("Only compliance supervisors may see this page."))
        return super().dispatch(request, *args, **kwargs)


def _page(request, cases):
    return Paginator(cases, PAGE_SIZE).get_page(request.GET.get("page"))


class QueueView(ReviewerView):
    def get(self, request):
        filters = {
            "risk": request.GET.get("risk", "") if request.GET.get("risk") in Risk.values else "",
            "workflow_name": request.GET.get("workflow", ""),
            "status": request.GET.get("status", ""),
            "overdue": request.GET.get("overdue") == "1",
            "query": request.GET.get("q", "")[:200],
            "assignee": request.GET.get("assignee", "")[:150],
            "group": request.GET.get("group", "")[:150],
            "sort": request.GET.get("sort", "")
            if request.GET.get("sort") in selectors.SORTS
            else "deadline",
            "following_up": request.GET.get("following_up") == "1",
        }
        # A supervisor balances the whole queue, not only what their own groups may take.
        cases = selectors.approvals_open_for(
            request.user, every_group=services.is_supervisor(request.user), **filters
        )
        return render(
            request,
            "approvals/queue.html",
            {
                "page": _page(request, cases),
                "filters": filters,
                "risks": Risk.choices,
                "workflows": selectors.approval_workflow_names(),
                "section": "queue",
                "groups": selectors.approval_group_names(),
                "assignees": selectors.approval_assignee_names(),
                "sorts": QUEUE_SORTS,
            },
        )


QUEUE_SORTS = [
    ("deadline", gettext_lazy("deadline")),
    ("risk", gettext_lazy("risk, highest first")),
    ("age", gettext_lazy("age, oldest first")),
]


class NextCaseView(ReviewerView):
    """GET: the next case of this reviewer's queue (after ``?after=<id>``, the case just
    decided), or the queue with a note when none is left."""

    def get(self, request):
        after = request.GET.get("after", "")
        case = selectors.approval_next_for(
            request.user, after=int(after) if after.isdigit() else None
        )
        if case is None:
            messages.info(request, _("No other case waits for you."))
            return redirect(reverse("approval_queue"))
        return redirect(reverse("approval_case", args=[case.pk]))


class MineView(ReviewerView):
    def get(self, request):
        return render(
            request,
            "approvals/mine.html",
            {"page": _page(request, selectors.approvals_mine(request.user)), "section": "mine"},
        )


class ArchiveView(ReviewerView):
    def get(self, request):
        query, status = request.GET.get("q", "")[:200], request.GET.get("status", "")
        cases = selectors.approvals_archive(
            query=query,
            status=status,
            user=None if services.is_supervisor(request.user) else request.user,
        )
        return render(
            request,
            "approvals/archive.html",
            {
                "page": _page(request, cases),
                "query": query,
                "status": status,
                "statuses": [(s, ApprovalStatus(s).label) for s in CLOSED_STATUSES],
                "section": "archive",
            },
        )


def _case_or_404(pk):
    try:
        return selectors.approval_get(pk)
    except ApprovalNotFound as exc:
        raise Http404(str(exc)) from None


def _routed_elsewhere(case) -> str:
    return _("Case #%(case)s is routed to %(groups)s; you are in none of them.") % {
        "case": case.pk,
        "groups": ", ".join(services.case_group_names(case)),
    }


def for_a_case(may=services.may_open, refusal=_routed_elsewhere):
    """Every handler of a URL naming a case: the case is loaded and ``may(case, user)`` asked
    before the handler reads anything the request carries, so bad input from someone who may
    not see the case is a 403 like the page's, never the case rendered with a 400 or 409.
    The handler gets the case in place of its id."""

    def decorate(handler):
        @functools.wraps(handler)
        def checked(view, request, pk):
            case = _case_or_404(pk)
            if not may(case, request.user):
                raise PermissionDenied(refusal(case))
            return handler(view, request, case)

        return checked

    return decorate


class CaseView(ReviewerView):
    @for_a_case()
    def get(self, request, case):
        return render_case(request, case)


def _closed_summary(case) -> str:
    """The read-only banner: how the case ended, by whom, when (in the reviewer's zone). Not the
    lost-race wording of services.closed_message: the reader may be the one who decided."""
    when = (
        formats.date_format(timezone.localtime(case.closed_at), "SHORT_DATETIME_FORMAT")
        if case.closed_at
        else ""
    )
    values = {"by": case.closed_by or services.SYSTEM, "when": when}
    messages_by_status = {
        ApprovalStatus.APPROVED: _(
            "This case was approved by %(by)s on %(when)s; it is read-only."
        ),
        ApprovalStatus.REJECTED: _(
            "This case was rejected by %(by)s on %(when)s; it is read-only."
        ),
        ApprovalStatus.RETURNED: _(
            "This case was sent back for more documents by %(by)s on %(when)s; it is read-only."
        ),
        ApprovalStatus.EXPIRED: _(
            "This case expired on %(when)s: nobody decided before its deadline."
        ),
        ApprovalStatus.CANCELLED: _(
            "This case was cancelled by %(by)s on %(when)s; it is read-only."
        ),
        ApprovalStatus.SUPERSEDED: _(
            "This case was decided, but its process was cancelled by %(by)s on %(when)s "
            "before it acted on the decision: nothing was done with it. It is read-only."
        ),
    }
    return messages_by_status[case.status] % values


def _token(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def _live_tokens(case, timeline) -> dict:
    """What the open page last saw: the case's state (status, holder, votes) and the run's
    journal. The live poll answers 204 while both stand, and re-renders the decision panel only
    when the case's state moved, so a reason being typed survives the timeline moving."""
    rows = timeline.context["entries"]
    return {
        "case": _token(case.status, case.assignee_id, case.approvals, case.updated_at.isoformat()),
        "run": _token(
            timeline.context["run_status"],
            [(row.position, row.status, row.at.isoformat()) for row in rows],
        ),
    }


def _grouped(choices: dict) -> list[tuple[str, list[tuple[str, str]]]]:
    """Standard texts grouped under the outcome they go with, for a <select> with optgroups."""
    labels = dict(Outcome.choices)
    return [(str(labels.get(outcome, outcome)), texts) for outcome, texts in choices.items()]


def _message_choices(case) -> list[tuple[str, list[tuple[str, str]]]]:
    return _grouped(customer_message_choices(case.workflow_name))


def _case_context(request, case, *, error: str = "", reason: str = "", posted=None) -> dict:
    votes = selectors.approval_decisions(case)
    supervisor = services.is_supervisor(request.user)
    voted = any(vote.reviewer_id == request.user.pk for vote in votes)
    read_only = case.status in CLOSED_STATUSES
    holds = [] if read_only else holds_on(case)  # each hold asked once per page
    sections = sections_for(case)
    timeline = sections[-1]
    user = request.user
    return {
        "case": case,
        "sections": sections,
        "decisions": votes,
        "live": _live_tokens(case, timeline),
        "timeline": timeline,
        "run_admin_url": (
            reverse("admin:durable_workflowrun_change", args=[quote(case.run_id)])
            if user.is_staff and user.has_perm("durable.view_workflowrun")
            else ""
        ),
        "audit": selectors.approval_audit(case),
        "error": error,
        "reason": reason,
        "message_choices": _message_choices(case),
        "posted": posted or {},
        "reason_choices": _grouped(reason_choices(case.workflow_name)),
        "read_only": read_only,
        # Segregation of duties, shown before the reviewer tries: the Approve button is off.
        "approve_refused": "" if read_only else approval_conflict(case, request.user),
        "approve_holds": [reason for hold in holds for reason in hold.reasons],
        "closed_message": _closed_summary(case) if case.status in CLOSED_STATUSES else "",
        "mine": case.assignee_id == request.user.pk,
        "held_by_other": case.status == ApprovalStatus.CLAIMED
        and case.assignee_id != request.user.pk,
        "already_voted": voted,
        "outcomes": Outcome,
        "section": "case",
        "may_take": services.may_take(case, request.user),
        "candidate_groups": services.case_group_names(case),
        "supervisor": supervisor,
        "stale": selectors.approval_is_stale(case),
        "eligible_reviewers": selectors.approval_eligible_reviewers(case)
        if supervisor and not read_only
        else [],
        "overridable_holds": [hold.name for hold in holds if hold.overridable]
        if supervisor
        else [],
        "following_up": bool(case.follow_up_at and case.follow_up_at > clock.now()),
        "evidence_url": reverse("approval_evidence", args=[case.pk])
        if case.status in WITH_DECISION_STATUSES
        else "",
    }


def render_case(
    request, case, *, error: str = "", reason: str = "", status: int = 200, posted=None
):
    return render(
        request,
        "approvals/case.html",
        _case_context(request, case, error=error, reason=reason, posted=posted),
        status=status,
    )


class CaseLiveView(ReviewerView):
    """GET ?case=<token>&run=<token>: the parts of an open case page that changed, as htmx
    out-of-band fragments (polled every 2 s), or 204 when nothing did. Routed like the page."""

    @for_a_case()
    def get(self, request, case):
        context = _case_context(request, case)
        seen = {"case": request.GET.get("case", ""), "run": request.GET.get("run", "")}
        if seen == context["live"]:
            return HttpResponse(status=204)
        context["case_changed"] = seen["case"] != context["live"]["case"]
        return render(request, "approvals/_case_live.html", context)


class EvidenceView(LoginRequiredMixin, View):
    """GET: a decided case's evidence pack as a ZIP attachment, for whoever may open the case and
    for the auditors; taking it is recorded in the case's audit trail
    (services.approval_evidence_take)."""

    http_method_names = ["get"]  # a HEAD would build and record one too

    @for_a_case(
        services.may_take_evidence,
        lambda case: (
            _(
                "Only those who may open case #%(case)s, and "
                "the auditors, may download its evidence."
            )
            % {"case": case.pk}
        ),
    )
    def get(self, request, case):
        try:
            pack = services.approval_evidence_take(
                case.pk,
                actor=request.user.get_username(),
                via="web",
                meta=services.RequestMeta.from_http(request),
            )
        except ApprovalError as exc:
            return HttpResponse(
                str(exc), status=exc.status_code, content_type="text/plain; charset=utf-8"
            )
        response = HttpResponse(pack.content, content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{pack.filename}"'
        response["Cache-Control"] = "no-store"
        response["X-Evidence-Manifest-SHA256"] = pack.manifest_sha256
        return response


class CaseActionView(ReviewerView):
    """POST only; a refused action re-renders the case page with the reason and its status code."""

    http_method_names = ["post"]
    action = ""

    @for_a_case()
    def post(self, request, case):
        if self.action in ("claim", "release", "decide") and not services.may_take(
            case, request.user
        ):
            # A supervisor sees the case, but only its reviewers act on it: refused before any
            # input is read, like everyone the case is not routed to.
            raise PermissionDenied(
                _(
                    "Only a compliance reviewer the case is routed to may claim, release or "
                    "decide case #%(case)s."
                )
                % {"case": case.pk}
            )
        pk = case.pk
        meta = services.RequestMeta.from_http(request)
        reason = request.POST.get("reason", "")
        try:
            if self.action == "claim":
                services.approval_claim(pk, actor=request.user, meta=meta)
                messages.success(request, _("You claimed case #%(id)s.") % {"id": pk})
            elif self.action == "release":
                services.approval_release(pk, actor=request.user, meta=meta)
                messages.success(request, _("Case #%(id)s is back in the queue.") % {"id": pk})
            elif self.action == "note":
                services.approval_note_add(pk, actor=request.user, text=reason, meta=meta)
                messages.success(request, _("Note added to case #%(id)s.") % {"id": pk})
            elif self.action == "follow_up":
                until = (
                    None if request.POST.get("clear") else _posted_datetime(request, "follow_up_at")
                )
                services.approval_follow_up(
                    pk, actor=request.user, until=until, reason=reason, meta=meta
                )
                if until is None:
                    messages.success(request, _("Case #%(id)s is back in the queue.") % {"id": pk})
                else:
                    messages.success(
                        request,
                        _("Case #%(case)s is hidden from the queue until %(until)s.")
                        % {
                            "case": pk,
                            "until": formats.date_format(
                                timezone.localtime(until), "SHORT_DATETIME_FORMAT"
                            ),
                        },
                    )
            else:
                outcome = request.POST.get("outcome", "")
                reason = reason_compose(
                    case.workflow_name, outcome, request.POST.get("reason_key", ""), reason
                )
                message = customer_message_compose(
                    case.workflow_name,
                    outcome,
                    request.POST.get("customer_message_key", ""),
                    request.POST.get("customer_message", ""),
                )
                case = services.approval_decide(
                    pk,
                    actor=request.user,
                    outcome=outcome,
                    reason=reason,
                    customer_message=message,
                    meta=meta,
                )
                messages.success(request, _decided_message(case, outcome))
        except ApprovalError as exc:
            return _refused(
                request,
                pk,
                exc,
                request.POST.get("reason", ""),
                posted={
                    key: request.POST.get(key, "")
                    for key in ("customer_message_key", "customer_message", "reason_key")
                },
            )
        return redirect(reverse("approval_case", args=[pk]))


def _refused(request, pk, exc: ApprovalError, reason: str, posted=None):
    """The case page with the refusal, for someone who may open it (``for_a_case`` made sure),
    unless it may no longer be seen: then a 403 that shows nothing of it."""
    if isinstance(exc, ApprovalNotFound):
        raise Http404(str(exc)) from None
    case = _case_or_404(pk)
    if not services.may_open(case, request.user):  # routed elsewhere since: the case stays unseen
        raise PermissionDenied(str(exc) if isinstance(exc, (NotEligible, NotAllowed)) else "")
    return render_case(
        request, case, error=str(exc), reason=reason, status=exc.status_code, posted=posted
    )


def _posted_datetime(request, name: str):
    """A datetime-local field, read in the current time zone; a clear 400 when it is not one."""
    try:
        value = parse_datetime(request.POST.get(name, "").strip())
    except ValueError:  # well-formed but impossible, e.g. month 13
        value = None
    if value is None:
        raise InvalidDate(_("Give a date and time (YYYY-MM-DD HH:MM)."))
    try:
        value = timezone.make_aware(value) if timezone.is_naive(value) else value
        value.astimezone(UTC)  # 9999-12-31 23:59 in São Paulo is past year 9999 in UTC
    except (OverflowError, ValueError):
        raise InvalidDate(_("Give a date and time (YYYY-MM-DD HH:MM).")) from None
    return value


class SupervisorActionView(SupervisorView):
    """Reassign, unclaim, extend: POST only, refused actions re-render the case with the reason."""

    http_method_names = ["post"]
    action = ""

    @for_a_case()
    def post(self, request, case):
        pk = case.pk
        meta = services.RequestMeta.from_http(request)
        reason = request.POST.get("reason", "")
        try:
            if self.action == "reassign":
                chosen = request.POST.get("to", "")
                to_user = (
                    get_user_model().objects.filter(pk=chosen).first() if chosen.isdigit() else None
                )
                if to_user is None:
                    raise ReviewerRequired(_("Choose the reviewer to hand the case to."))
                services.approval_reassign(
                    pk, actor=request.user, to_user=to_user, reason=reason, meta=meta
                )
                messages.success(
                    request,
                    _("Case #%(case)s is now with %(user)s.")
                    % {"case": pk, "user": to_user.get_username()},
                )
            elif self.action == "override_hold":
                services.approval_hold_override(pk, actor=request.user, reason=reason, meta=meta)
                messages.success(
                    request,
                    _(
                        "Case #%(case)s may now be approved despite the hold; "
                        "your reason is in its audit trail."
                    )
                    % {"case": pk},
                )
            elif self.action == "unclaim":
                services.approval_unclaim(pk, actor=request.user, reason=reason, meta=meta)
                messages.success(request, _("Case #%(case)s is back in the queue.") % {"case": pk})
            else:
                due_at = _posted_datetime(request, "due_at")
                services.approval_extend_deadline(
                    pk, actor=request.user, due_at=due_at, reason=reason, meta=meta
                )
                messages.success(
                    request,
                    _("Case #%(case)s is now due %(due)s.")
                    % {
                        "case": pk,
                        "due": formats.date_format(
                            timezone.localtime(due_at), "SHORT_DATETIME_FORMAT"
                        ),
                    },
                )
        except ApprovalError as exc:
            return _refused(request, pk, exc, reason)
        return redirect(
            request.POST.get("next")
            if request.POST.get("next") == reverse("approval_team")
            else reverse("approval_case", args=[pk])
        )


class TeamView(SupervisorView):
    """Every claimed case, stale claims flagged, with the supervisor's unclaim at hand."""

    def get(self, request):
        return render(
            request,
            "approvals/team.html",
            {
                "page": _page(request, selectors.approvals_claimed()),
                "section": "team",
                "stale_hours": selectors.stale_claim_age().total_seconds() / 3600,
            },
        )


class DashboardView(SupervisorView):
    def get(self, request):
        weeks = figures.weekly_time_to_decision()
        return render(
            request,
            "approvals/dashboard.html",
            {
                "backlog": figures.backlog(),
                "buckets": [label for label, _key, _bound in figures.AGE_BUCKETS],
                "past_sla": figures.past_sla(),
                "sla_hours": selectors.sla_age().total_seconds() / 3600,
                "tallies": figures.decisions_per_reviewer(),
                "outcomes": [
                    *Outcome.choices,
                    (figures.SUPERSEDED, ApprovalStatus.SUPERSEDED.label),
                ],
                "weeks": weeks,
                "chart": figures.chart(weeks),
                "stale_claims": figures.stale_claims(),
                "section": "dashboard",
            },
        )


def _decided_message(case, outcome: str) -> str:
    """What the reviewer just did, said as done: "You approved case #5 (1 of 2)." and what comes
    next."""
    values = {
        "id": case.pk,
        "count": case.decisions.filter(outcome=Outcome.APPROVE).count(),
        "required": case.required_approvals,
    }
    if outcome == Outcome.APPROVE:
        done = _("You approved case #%(id)s (%(count)s of %(required)s).") % values
    elif outcome == Outcome.REJECT:
        done = _("You rejected case #%(id)s.") % values
    else:
        done = _("You sent case #%(id)s back for more documents.") % values
    then = (
        _("The process resumes.")
        if case.status in CLOSED_STATUSES
        else _("A second reviewer must approve it too.")
    )
    return f"{done} {then}"


class LanguageView(View):
    """POST language=<code>: the UI's language from now on; stored for a signed-in user (so it
    follows them to another device), in a cookie for the sign-in page."""

    http_method_names = ["post"]

    def post(self, request):
        language = request.POST.get("language", "")
        if language not in dict(settings.LANGUAGES):
            return render(request, "403.html", {"exception": _("Unknown language.")}, status=400)
        if request.user.is_authenticated:
            services.reviewer_language_set(request.user, language)
        target = request.POST.get("next", "")
        if not url_has_allowed_host_and_scheme(
            target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        ):
            target = reverse("approval_queue")
        response = redirect(target)
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME,
            language,
            max_age=365 * 24 * 3600,
            samesite="Lax",
            secure=settings.SESSION_COOKIE_SECURE,
            httponly=True,
        )
        return response
