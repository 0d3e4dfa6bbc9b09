"""The compliance reviewer's pages: queue, my cases, archive, case page and its actions.

Thin: every write goes through approvals.services, every read through selectors. Only
users with the decide permission get in; anyone else signed in gets 403.
"""
from django.contrib import messages
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views import View

from approvals import selectors, services
from approvals.duties import approval_conflict
from approvals.errors import ApprovalError, ApprovalNotFound
from approvals.holds import holds_for
from approvals.models import CLOSED_STATUSES, ApprovalStatus, Outcome, Risk
from approvals.panels import sections_for

PAGE_SIZE = 50


class ReviewerView(LoginRequiredMixin, View):
    """Anonymous -> login page; signed in without the decide permission -> 403."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and not services.is_reviewer(request.user):
            raise PermissionDenied("Only compliance reviewers may see approval requests.")
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
        }
        cases = selectors.approvals_open_for(request.user, **filters)
        return render(request, "approvals/queue.html", {
            "page": _page(request, cases), "filters": filters, "risks": Risk.choices,
            "workflows": selectors.approval_workflow_names(), "section": "queue",
        })


class MineView(ReviewerView):
    def get(self, request):
        return render(request, "approvals/mine.html", {
            "page": _page(request, selectors.approvals_mine(request.user)), "section": "mine"})


class ArchiveView(ReviewerView):
    def get(self, request):
        query, status = request.GET.get("q", "")[:200], request.GET.get("status", "")
        cases = selectors.approvals_archive(query=query, status=status)
        return render(request, "approvals/archive.html", {
            "page": _page(request, cases), "query": query, "status": status,
            "statuses": [(s, s) for s in CLOSED_STATUSES], "section": "archive"})


def _case_or_404(pk):
    try:
        return selectors.approval_get(pk)
    except ApprovalNotFound as exc:
        raise Http404(str(exc)) from None


class CaseView(ReviewerView):
    def get(self, request, pk):
        return render_case(request, _case_or_404(pk))


def render_case(request, case, *, error: str = "", reason: str = "", status: int = 200):
    votes = selectors.approval_decisions(case)
    voted = any(vote.reviewer_id == request.user.pk for vote in votes)
    read_only = case.status in CLOSED_STATUSES
    return render(request, "approvals/case.html", {
        "case": case, "sections": sections_for(case), "decisions": votes,
        "audit": selectors.approval_audit(case), "error": error, "reason": reason,
        "read_only": read_only,
        # Segregation of duties, shown before the reviewer tries: the Approve button is off.
        "approve_refused": "" if read_only else approval_conflict(case, request.user),
        "approve_holds": [] if read_only else holds_for(case),
        "closed_message": services.closed_message(case) if case.status in CLOSED_STATUSES else "",
        "mine": case.assignee_id == request.user.pk,
        "held_by_other": case.status == ApprovalStatus.CLAIMED and case.assignee_id != request.user.pk,
        "already_voted": voted, "outcomes": Outcome, "section": "case",
    }, status=status)


class CaseActionView(ReviewerView):
    """POST only; a refused action re-renders the case page with the reason and its status code."""

    http_method_names = ["post"]
    action = ""

    def post(self, request, pk):
        meta = services.RequestMeta.from_http(request)
        reason = request.POST.get("reason", "")
        try:
            if self.action == "claim":
                services.approval_claim(pk, actor=request.user, meta=meta)
                messages.success(request, f"You claimed case #{pk}.")
            elif self.action == "release":
                services.approval_release(pk, actor=request.user, meta=meta)
                messages.success(request, f"Case #{pk} is back in the queue.")
            else:
                outcome = request.POST.get("outcome", "")
                case = services.approval_decide(pk, actor=request.user, outcome=outcome,
                                                reason=reason, meta=meta)
                messages.success(request, _decided_message(case, outcome))
        except ApprovalError as exc:
            if isinstance(exc, ApprovalNotFound):
                raise Http404(str(exc)) from None
            return render_case(request, _case_or_404(pk), error=str(exc), reason=reason,
                               status=exc.status_code)
        return redirect(reverse("approval_case", args=[pk]))


def _decided_message(case, outcome: str) -> str:
    if case.status in CLOSED_STATUSES:
        return f"Case #{case.pk} is {case.get_status_display().lower()}; the process resumes."
    return f"Your approval of case #{case.pk} is recorded; a second reviewer must approve it too."
