"""The admin's "Fork from here": a journal row's link, a confirmation page, then the fork.

Thin: ``selectors.run_fork_preview`` says what the fork keeps and runs again (or why it is
refused), ``services.run_fork`` makes it. Operators only; the fork is a POST with CSRF.
"""

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from durable import selectors, services
from durable.errors import DurableError, RunNotFound
from durable.models import EntryKind
from durable.surfaces.admin.display import label
from durable.surfaces.audit import request_audit


def fork_view(model_admin, request, object_id):
    if not model_admin.has_operate_permission(request):
        raise PermissionDenied
    if request.method not in ("GET", "POST"):
        return HttpResponseNotAllowed(["GET", "POST"])
    run_id = unquote(object_id)
    at_position = _position(request.POST if request.method == "POST" else request.GET)
    try:
        preview = selectors.run_fork_preview(run_id, at_position if at_position is not None else -1)
    except RunNotFound as error:
        model_admin.message_user(request, str(error), messages.ERROR)
        return HttpResponseRedirect(reverse("admin:durable_workflowrun_changelist"))
    if request.method == "POST" and not preview.refusal:
        actor, audit = request_audit(request, via="admin")
        try:
            fork = services.run_fork(run_id, at_position=at_position, actor=actor, audit=audit)
        except DurableError as error:
            model_admin.message_user(request, str(error), messages.ERROR)
        else:
            model_admin.message_user(
                request,
                _("Run %(run)s forked at position %(position)s: %(fork)s.")
                % {"run": run_id, "position": at_position, "fork": fork.id},
                messages.SUCCESS,
            )
            return HttpResponseRedirect(
                reverse("admin:durable_workflowrun_change", args=[quote(fork.id)])
            )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": _("Fork %(run)s at position %(position)s")
        % {"run": run_id, "position": at_position},
        "opts": model_admin.opts,
        "run": preview.run,
        "preview": preview,
        "first_again_kind": label(EntryKind, preview.first_again.kind)
        if preview.first_again
        else "",
    }
    return TemplateResponse(request, "admin/durable/workflowrun/fork_confirm.html", context)


def _position(data) -> int | None:
    raw = data.get("at", "")
    return int(raw) if raw.isdigit() and len(raw) < 10 else None
