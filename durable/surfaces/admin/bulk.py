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

from durable import conf, validation
from durable.features import bulk
from durable.surfaces.audit import request_audit
from durable.runtime.context import check_attribute_name
from durable.errors import DurableError
from durable.models import RunStatus
from durable.selectors import RunFilter

ACTION_CHOICES = [("retry", "Retry (failed or blocked runs)"),
                  ("wake", "Wake now (pending or waiting runs: sleeps and back-offs end)"),
                  ("cancel", "Cancel")]
DONE = {"retry": "sent back to pending", "wake": "woken", "cancel": "cancelled"}
# The run list's filter parameters, so "Bulk operation…" starts from what the list shows.
LIST_PARAMS = {"status__exact": "status", "workflow_name__exact": "workflow", "workflow_name": "workflow",
               "workflow_version__exact": "version", "workflow_version": "version", "action": "action"}


class BulkForm(forms.Form):
    action = forms.ChoiceField(choices=ACTION_CHOICES)
    graceful = forms.BooleanField(required=False, label="Graceful (cancel only)",
                                  help_text="Each workflow is told where it waits and may clean up first.")
    reason = forms.CharField(required=False, max_length=1000, label="Reason (cancel only)")
    status = forms.ChoiceField(required=False, choices=[("", "any status"), *RunStatus.choices])
    workflow = forms.CharField(required=False, max_length=200)
    version = forms.IntegerField(required=False, min_value=1, max_value=2**31 - 1)
    attributes = forms.CharField(
        required=False, label="Search attributes", widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
        help_text="One a line, name=value, as the run list's attr.&lt;name&gt;=&lt;value&gt;, "
                  "e.g. cnpj=11222333000181. All filters combine with AND.")

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
                raise forms.ValidationError(f"{line!r} is not name=value.")
            try:
                check_attribute_name(name.strip())
            except ValueError as error:
                raise forms.ValidationError(str(error)) from None
            pairs.append((name.strip(), self._storable(text.strip(), f"attribute {name.strip()}")))
        return tuple(pairs)

    def clean(self):
        cleaned = super().clean()
        if not self.errors and self.run_filter().is_empty():
            raise forms.ValidationError("Choose at least one filter: a bulk operation never acts on every run.")
        return cleaned

    def run_filter(self) -> RunFilter:
        data = self.cleaned_data
        return RunFilter(status=data.get("status") or None, workflow=data.get("workflow"),
                         version=data.get("version"), attributes=data.get("attributes", ()))

    def operation(self) -> bulk.BulkOperation:
        return bulk.BulkOperation(self.cleaned_data["action"], self.run_filter(),
                                  reason=self.cleaned_data["reason"], graceful=self.cleaned_data["graceful"])

    @staticmethod
    def _storable(value: str, what: str) -> str:
        try:
            return validation.check_text(value, what=what)
        except DurableError as error:
            raise forms.ValidationError(str(error)) from None


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
    form = BulkForm(request.POST) if request.method == "POST" else BulkForm(initial=initial_from(request.GET))
    if request.method == "POST" and form.is_valid():
        try:
            preview = bulk.bulk_preview(form.operation(), actor=request_audit(request, via="admin")[0])
        except bulk.BulkError as error:
            form.add_error(None, str(error))
        else:
            return _page(model_admin, request, "bulk_confirm.html", "Confirm the bulk operation",
                         preview=preview, verb=dict(ACTION_CHOICES)[preview.operation.action],
                         expires_minutes=conf.bulk_confirm_seconds() // 60)
    return _page(model_admin, request, "bulk_form.html", "Bulk operation on runs", form=form,
                 status=400 if request.method == "POST" else 200)


def _confirm(model_admin, request):
    actor, audit = request_audit(request, via="admin")
    try:
        result = bulk.bulk_confirm(request.POST["token"], actor=actor, audit=audit)
    except bulk.BulkError as error:
        return _page(model_admin, request, "bulk_form.html", "Bulk operation on runs", form=BulkForm(),
                     refusal=str(error), status=400)
    action = result.operation.action
    level = messages.SUCCESS if result.acted else messages.WARNING
    model_admin.message_user(
        request, f"{result.acted} run(s) {DONE[action]}; {result.skipped} skipped (their status no longer "
                 f"allowed it). Each has an audit row (bulk {result.bulk_id}).", level)
    for run_id, why in result.skipped_runs:
        model_admin.message_user(request, f"Skipped {run_id}: {why}", messages.WARNING)
    if result.remaining:   # the pass ran out of time: the operator goes on with one click
        return _page(model_admin, request, "bulk_continue.html", "Continue the bulk operation", result=result)
    return HttpResponseRedirect(reverse("admin:durable_workflowrun_changelist"))


def _page(model_admin, request, template: str, title: str, *, status: int = 200, **context):
    return TemplateResponse(request, f"admin/durable/workflowrun/{template}", {
        **model_admin.admin_site.each_context(request), "title": title, "opts": model_admin.opts, **context,
    }, status=status)
