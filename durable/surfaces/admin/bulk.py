"""The admin's bulk operation: a filter form, a confirmation page with the count, then the act.

Thin: the form parses the filter, ``durable.features.bulk`` previews and acts (through the
services, one audit row per run). Operators only; every step is a POST with CSRF.
"""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext, pgettext_lazy

from durable import conf, validation
from durable.errors import DurableError
from durable.features import bulk
from durable.models import RunStatus
from durable.runtime.context import check_attribute_name
from durable.selectors import RunFilter
from durable.surfaces.admin.display import data, label
from durable.surfaces.audit import request_audit

ACTION_CHOICES = [
    ("retry", gettext_lazy("Retry (failed or blocked runs)")),
    ("wake", gettext_lazy("Wake now (pending or waiting runs: sleeps and back-offs end)")),
    ("cancel", gettext_lazy("Cancel")),
]
# The action as the confirm button's verb ("Confirm: retry 3 runs").
ACTION_VERBS = {
    "retry": pgettext_lazy("bulk action", "retry"),
    "wake": pgettext_lazy("bulk action", "wake"),
    "cancel": pgettext_lazy("bulk action", "cancel"),
}
FILTER_LABELS = {
    "status": gettext_lazy("status"),
    "workflow": gettext_lazy("workflow"),
    "version": gettext_lazy("version"),
    "parent": gettext_lazy("parent run"),
}
# The run list's filter parameters, so "Bulk operation…" starts from what the list shows.
LIST_PARAMS = {
    "status__exact": "status",
    "workflow_name__exact": "workflow",
    "workflow_name": "workflow",
    "workflow_version__exact": "version",
    "workflow_version": "version",
    "action": "action",
}


def done_message(action: str, count: int) -> str:
    """What an action did to ``count`` runs ("3 runs woken"), in the reader's language."""
    if action == "retry":
        text = ngettext(
            "%(count)d run sent back to pending", "%(count)d runs sent back to pending", count
        )
    elif action == "wake":
        text = ngettext("%(count)d run woken", "%(count)d runs woken", count)
    else:
        text = ngettext("%(count)d run cancelled", "%(count)d runs cancelled", count)
    return text % {"count": count}


class BulkForm(forms.Form):
    action = forms.ChoiceField(label=gettext_lazy("Action"), choices=ACTION_CHOICES)
    graceful = forms.BooleanField(
        required=False,
        label=gettext_lazy("Graceful (cancel only)"),
        help_text=gettext_lazy("Each workflow is told where it waits and may clean up first."),
    )
    reason = forms.CharField(
        required=False, max_length=1000, label=gettext_lazy("Reason (cancel only)")
    )
    status = forms.ChoiceField(
        label=gettext_lazy("Status"),
        required=False,
        choices=[("", gettext_lazy("any status")), *RunStatus.choices],
    )
    workflow = forms.CharField(label=gettext_lazy("Workflow"), required=False, max_length=200)
    version = forms.IntegerField(
        label=gettext_lazy("Version"), required=False, min_value=1, max_value=2**31 - 1
    )
    attributes = forms.CharField(
        required=False,
        label=gettext_lazy("Search attributes"),
        widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text=gettext_lazy(
            "One a line, name=value, as the run list's attr.&lt;name&gt;=&lt;value&gt;, "
            "e.g. cnpj=11222333000181. All filters combine with AND."
        ),
    )

    def clean_reason(self):
        return self._storable(self.cleaned_data["reason"], "reason")

    def clean_workflow(self):
        return self._storable(self.cleaned_data["workflow"], "workflow") or None

    def clean_attributes(self):
        pairs = []
        for line in self.cleaned_data["attributes"].splitlines():
            if not line.strip():
                continue
            name, equals, text = line.partition("=")
            if not equals:
                raise forms.ValidationError(_("%(line)s is not name=value.") % {"line": repr(line)})
            try:
                check_attribute_name(name.strip())
            except ValueError as error:
                raise forms.ValidationError(str(error)) from None
            pairs.append((name.strip(), self._storable(text.strip(), f"attribute {name.strip()}")))
        return tuple(pairs)

    def clean(self):
        cleaned = super().clean()
        if not self.errors and self.run_filter().is_empty():
            raise forms.ValidationError(
                _("Choose at least one filter: a bulk operation never acts on every run.")
            )
        return cleaned

    def run_filter(self) -> RunFilter:
        data = self.cleaned_data
        return RunFilter(
            status=data.get("status") or None,
            workflow=data.get("workflow"),
            version=data.get("version"),
            attributes=data.get("attributes", ()),
        )

    def operation(self) -> bulk.BulkOperation:
        return bulk.BulkOperation(
            self.cleaned_data["action"],
            self.run_filter(),
            reason=self.cleaned_data["reason"],
            graceful=self.cleaned_data["graceful"],
        )

    @staticmethod
    def _storable(value: str, what: str) -> str:
        try:
            return validation.check_text(value, what=what)
        except DurableError as error:
            raise forms.ValidationError(str(error)) from None


def filter_rows(run_filter: RunFilter) -> list[tuple[str, str]]:
    """The confirmation page's table: each filter's name, and its value (a status by its label;
    names and attributes as typed)."""
    return [
        (
            FILTER_LABELS.get(name, name),
            label(RunStatus, value) if name == "status" else data(value),
        )
        for name, value in run_filter.as_params().items()
    ]


def initial_from(params) -> dict:
    """The form's starting values from the run list's query string."""
    initial = {field: params[param] for param, field in LIST_PARAMS.items() if params.get(param)}
    if params.get("stage"):
        initial["attributes"] = f"stage={params['stage']}"
    return initial


def bulk_view(model_admin, request):
    """GET: the form. POST: the confirmation page (a dry run), or with its token, the act."""
    if not model_admin.has_operate_permission(request):
        raise PermissionDenied
    if request.method == "POST" and "token" in request.POST:
        return _confirm(model_admin, request)
    form = (
        BulkForm(request.POST)
        if request.method == "POST"
        else BulkForm(initial=initial_from(request.GET))
    )
    if request.method == "POST" and form.is_valid():
        try:
            preview = bulk.bulk_preview(
                form.operation(), actor=request_audit(request, via="admin")[0]
            )
        except bulk.BulkError as error:
            form.add_error(None, str(error))
        else:
            return _page(
                model_admin,
                request,
                "bulk_confirm.html",
                _("Confirm the bulk operation"),
                preview=preview,
                verb=dict(ACTION_CHOICES)[preview.operation.action],
                action_label=ACTION_VERBS[preview.operation.action],
                filters=filter_rows(preview.operation.run_filter),
                expires_minutes=conf.bulk_confirm_seconds() // 60,
            )
    return _page(
        model_admin,
        request,
        "bulk_form.html",
        _("Bulk operation on runs"),
        form=form,
        status=400 if request.method == "POST" else 200,
    )


def _confirm(model_admin, request):
    actor, audit = request_audit(request, via="admin")
    try:
        result = bulk.bulk_confirm(request.POST["token"], actor=actor, audit=audit)
    except bulk.BulkError as error:
        return _page(
            model_admin,
            request,
            "bulk_form.html",
            _("Bulk operation on runs"),
            form=BulkForm(),
            refusal=str(error),
            status=400,
        )
    action = result.operation.action
    level = messages.SUCCESS if result.acted else messages.WARNING
    skipped = ngettext("%(count)d skipped", "%(count)d skipped", result.skipped) % {
        "count": result.skipped
    }
    model_admin.message_user(
        request,
        _(
            "%(done)s; %(skipped)s (their status no longer "
            "allowed it). Each has an audit row (bulk %(bulk)s)."
        )
        % {"done": done_message(action, result.acted), "skipped": skipped, "bulk": result.bulk_id},
        level,
    )
    for run_id, why in result.skipped_runs:
        model_admin.message_user(
            request, _("Skipped %(run)s: %(why)s") % {"run": run_id, "why": why}, messages.WARNING
        )
    if result.remaining:  # the pass ran out of time: the operator goes on with one click
        return _page(
            model_admin,
            request,
            "bulk_continue.html",
            _("Continue the bulk operation"),
            result=result,
            action_label=ACTION_VERBS[action],
        )
    return HttpResponseRedirect(reverse("admin:durable_workflowrun_changelist"))


def _page(model_admin, request, template: str, title: str, *, status: int = 200, **context):
    return TemplateResponse(
        request,
        f"admin/durable/workflowrun/{template}",
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": model_admin.opts,
            **context,
        },
        status=status,
    )
