"""The invoice admin's operations: issue, void and a new due date, each through billing's
services, so the invoice's run decides (an update) and nothing is written around it."""

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from durable.surfaces.audit import request_audit
from processes.billing import rules
from processes.billing.services import InvoiceSettled, invoice_due_date_change, invoice_void

# Why an invoice refused, by the status that refused it (InvoiceSettled.status).
REFUSALS = {
    "paid": gettext_lazy("%(number)s: refused: the invoice is paid"),
    "voided": gettext_lazy("%(number)s: refused: the invoice is already voided"),
    "escalated": gettext_lazy("%(number)s: refused: the invoice was escalated to finance"),
    "ended": gettext_lazy("%(number)s: refused: its reminders have ended"),
}
# The due-date rules (billing.rules.due_at_problem), as the form says them.
DUE_PROBLEMS = {
    rules.DUE_IN_THE_PAST: gettext_lazy("The new due date must be in the future."),
    rules.DUE_TOO_FAR: gettext_lazy("The new due date must be within two years."),
}


class VoidForm(forms.Form):
    reason = forms.CharField(
        label=gettext_lazy("Reason"),
        max_length=rules.REASON_MAX,
        help_text=gettext_lazy("Kept in the invoice run's journal and audit."),
    )


class DueDateForm(forms.Form):
    due_at = forms.DateTimeField(
        label=gettext_lazy("New due date"),
        help_text=gettext_lazy("Reminders start again from it."),
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}, format="%Y-%m-%dT%H:%M"),
        input_formats=["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%d"],
    )
    reason = forms.CharField(
        label=gettext_lazy("Reason"),
        max_length=rules.REASON_MAX,
        help_text=gettext_lazy("Kept in the invoice run's journal and audit."),
    )

    def clean_due_at(self):
        due_at = self.cleaned_data["due_at"]
        problem = rules.due_at_problem(due_at)
        if problem:
            raise forms.ValidationError(DUE_PROBLEMS.get(problem, problem))
        return due_at


@admin.action(description=gettext_lazy("Void the selected invoices…"), permissions=["change"])
def void_invoices(model_admin, request, queryset):
    """Ask for a reason, then void each selected invoice through its run."""
    return _operate(
        model_admin,
        request,
        queryset,
        VoidForm,
        "void_invoices",
        _("Void invoices"),
        lambda invoice, data, who: invoice_void(invoice, reason=data["reason"], **who),
        done=_("voided"),
    )


@admin.action(
    description=gettext_lazy("Give the selected invoices a new due date…"), permissions=["change"]
)
def change_due_date(model_admin, request, queryset):
    """Ask for the new date, then give it to each selected invoice through its run."""
    return _operate(
        model_admin,
        request,
        queryset,
        DueDateForm,
        "change_due_date",
        _("Change the due date"),
        lambda invoice, data, who: invoice_due_date_change(
            invoice, due_at=data["due_at"], reason=data["reason"], **who
        ),
        done=_("due date changed; reminders start again from it"),
    )


def _operate(
    model_admin, request, queryset, form_class, action: str, title: str, apply, *, done: str
):
    """Django's intermediate-page action: the form first, then each invoice's outcome as a
    message (applied, stored for its run, or refused with the reason)."""
    form = form_class(request.POST if "apply" in request.POST else None)
    if "apply" in request.POST and form.is_valid():
        actor, audit = request_audit(request, via="admin")
        for invoice in queryset.order_by("number"):
            try:
                applied = apply(invoice, form.cleaned_data, {"actor": actor, "audit": audit})
            except InvoiceSettled as refused:
                text = REFUSALS.get(refused.status, gettext_lazy("%(number)s: refused: %(reason)s"))
                model_admin.message_user(
                    request, text % {"number": invoice.number, "reason": refused}, messages.WARNING
                )
            else:
                model_admin.message_user(
                    request,
                    f"{invoice.number}: {done}"
                    if applied
                    else _(
                        "%(number)s: stored; its run will apply it "
                        "(it did not answer within %(seconds)s s)"
                    )
                    % {"number": invoice.number, "seconds": f"{rules.OPERATOR_WAIT_SECONDS:g}"},
                    messages.SUCCESS if applied else messages.INFO,
                )
        return None
    return TemplateResponse(
        request,
        "admin/processes/invoice/operate.html",
        {
            **model_admin.admin_site.each_context(request),
            "title": title,
            "opts": model_admin.opts,
            "form": form,
            "invoices": queryset.order_by("number"),
            "action": action,
            "action_checkbox_name": "_selected_action",
        },
        status=400 if form.is_bound else 200,
    )
