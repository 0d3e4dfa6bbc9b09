"""The operators' admin for runs: read everything, repair through the services, audit every act.

Nothing here writes a row directly: cancel, retry, wake and signal go through
``durable.services`` (which keep the FSM and the audit trail), need the
``durable.operate_workflowrun`` permission, and are POST-only with CSRF. The journal,
the signals and the status are never editable.
"""

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import TextField
from django.db.models.functions import Cast
from django.http import HttpResponseNotAllowed, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from durable import selectors, services, validation
from durable.errors import DurableError
from durable.models import AuditAction, AuditEvent, LimitTicket, RunStatus, WorkflowRun
from durable.surfaces.admin import bulk, fork
from durable.surfaces.admin.display import (
    EngineAssets,
    ReadOnlyAdmin,
    badge,
    data,
    json_block,
    label,
    run_link,
    stamp_column,
)
from durable.surfaces.admin.paging import EstimatedCountPaginator
from durable.surfaces.admin.rows import audit_row, journal_row
from durable.surfaces.admin.search import RunSearch
from durable.surfaces.admin.timeline import timeline_svg
from durable.surfaces.audit import request_audit
from durable.templatetags.durable_admin import breakable

OPERATE_PERMISSION = "durable.operate_workflowrun"

# Apps built on the engine link a run's page to their own pages ("the compliance case of this
# run") without the engine importing them: fn(run, request) -> [(label, url), ...].
_run_links: list = []


def register_run_links(fn):
    """Show ``fn(run, request)``'s (label, url) pairs on every run's admin page (idempotent)."""
    if fn not in _run_links:
        _run_links.append(fn)
    return fn


def run_links(run, request) -> list[tuple[str, str]]:
    return [link for fn in _run_links for link in fn(run, request)]


CHILDREN_SHOWN = 20


class SignalForm(forms.Form):
    name = forms.CharField(
        label=gettext_lazy("Name"),
        max_length=255,
        help_text=gettext_lazy(
            "The signal the workflow waits for, e.g. <code "
            'translate="no">documents_received</code>.'
        ),
    )
    payload = forms.JSONField(
        label=gettext_lazy("Payload"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
        help_text=gettext_lazy(
            'JSON, e.g. <code translate="no">{"files": ["contrato.pdf"]}</code>. Empty means '
            'null. Decisions come only from reviewers (<code translate="no">approval:*</code> '
            "keys are refused)."
        ),
    )
    dedupe_key = forms.CharField(
        label=gettext_lazy("Dedupe key"),
        max_length=255,
        required=False,
        help_text=gettext_lazy("Optional: a second signal with the same key is ignored."),
    )

    def clean_name(self):
        return self._storable(self.cleaned_data["name"], "name")

    def clean_dedupe_key(self):
        return self._storable(self.cleaned_data["dedupe_key"], "dedupe key") or None

    def clean_payload(self):
        return self._storable(self.cleaned_data["payload"], "payload")

    @staticmethod
    def _storable(value, what):
        try:
            if isinstance(value, str):
                return validation.check_text(value, what=what)
            return validation.check_json_value(value, what=what)
        except DurableError as error:
            raise forms.ValidationError(str(error)) from None


class StageFilter(admin.SimpleListFilter):
    """The ``stage`` search attribute: the human status a workflow gives its runs."""

    title = gettext_lazy("stage")
    parameter_name = "stage"

    def lookups(self, request, model_admin):
        return [(stage, data(stage)) for stage in selectors.run_stages()]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return selectors.runs_with_attributes(queryset, [("stage", self.value())])


class WorkflowNameFilter(admin.SimpleListFilter):
    """By workflow, its choices read one index probe per workflow (never every run)."""

    title = gettext_lazy("workflow")
    parameter_name = "workflow_name__exact"  # the parameter of the plain field filter it replaced

    def lookups(self, request, model_admin):
        return [(name, data(name)) for name in selectors.run_workflow_names()]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(workflow_name=self.value())


class WorkflowVersionFilter(admin.SimpleListFilter):
    """By version, its choices the registered workflows' versions."""

    title = gettext_lazy("workflow version")
    parameter_name = "workflow_version__exact"

    def lookups(self, request, model_admin):
        return [(str(version), str(version)) for version in selectors.workflow_versions()]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        try:
            return queryset.filter(workflow_version=int(self.value()))
        except ValueError:
            return queryset.none()


@admin.register(WorkflowRun)
class WorkflowRunAdmin(RunSearch, ReadOnlyAdmin):
    list_display = [
        "run_id",
        "workflow",
        "status_badge",
        "waits_for",
        "wake_at_stamp",
        "advances",
        "updated_at_stamp",
    ]
    list_filter = ["status", StageFilter, WorkflowNameFilter, WorkflowVersionFilter]
    # attributes_text: the search attributes as JSON text (see get_queryset), so a search
    # for a CNPJ or a customer's name finds their run; on PostgreSQL through a trigram
    # index (search.py).
    search_fields = ["id", "attributes_text"]
    ordering = ["-created_at"]
    list_per_page = 100
    # Millions of runs: no count of the whole table per page (paging.py), none per filter choice.
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    show_facets = admin.ShowFacets.NEVER
    actions = ["cancel_selected", "retry_selected", "wake_selected"]
    change_form_template = "admin/durable/workflowrun/change_form.html"
    Media = EngineAssets
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "run_id",
                    "workflow",
                    "status_badge",
                    "waits_for",
                    "wake_at_stamp",
                    "advances",
                    "created_at_stamp",
                    "updated_at_stamp",
                    "finished_at_stamp",
                ]
            },
        ),
        (gettext_lazy("Search attributes"), {"fields": ["attributes_json"]}),
        (gettext_lazy("Parent and children"), {"fields": ["parent_link", "children_links"]}),
        (
            gettext_lazy("Forks and continue-as-new"),
            {"fields": ["forked_from_link", "forks_links", "chain_links"]},
        ),
        (
            gettext_lazy("Input, result, error"),
            {"fields": ["input_json", "result_json", "error_json"]},
        ),
        (
            gettext_lazy("Lease"),
            {
                "fields": [
                    "lease_owner_cell",
                    "lease_expires_at_stamp",
                    "fencing_token",
                    "signal_seq",
                ],
                "classes": ["collapse"],
            },
        ),
    ]
    readonly_fields = [
        "run_id",
        "workflow",
        "status_badge",
        "attributes_json",
        "waits_for",
        "wake_at_stamp",
        "advances",
        "created_at_stamp",
        "updated_at_stamp",
        "finished_at_stamp",
        "input_json",
        "result_json",
        "error_json",
        "lease_owner_cell",
        "lease_expires_at_stamp",
        "fencing_token",
        "signal_seq",
        "parent_link",
        "children_links",
        "forked_from_link",
        "forks_links",
        "chain_links",
    ]

    # --- nothing is edited, added or deleted here: repairs are the actions below ---

    def has_operate_permission(self, request):
        return request.user.has_perm(OPERATE_PERMISSION)

    def get_queryset(self, request):
        return (
            super().get_queryset(request).annotate(attributes_text=Cast("attributes", TextField()))
        )

    def lookup_allowed(self, lookup, value, request=None):
        # "all children" links to the list of one parent's children
        return lookup == "parent__id__exact" or super().lookup_allowed(lookup, value, request)

    # --- columns ---

    @admin.display(description=gettext_lazy("id"), ordering="id")
    def run_id(self, run):
        return data(breakable(run.id))

    @admin.display(description=gettext_lazy("waiting for"), ordering="waiting_for")
    def waits_for(self, run):
        return data(breakable(run.waiting_for)) if run.waiting_for else ""

    wake_at_stamp = stamp_column("wake_at", gettext_lazy("wake at"))
    created_at_stamp = stamp_column("created_at", gettext_lazy("created at"))
    updated_at_stamp = stamp_column("updated_at", gettext_lazy("updated at"))
    finished_at_stamp = stamp_column("finished_at", gettext_lazy("finished at"))
    lease_expires_at_stamp = stamp_column("lease_expires_at", gettext_lazy("lease expires at"))

    @admin.display(description=gettext_lazy("lease held by"))
    def lease_owner_cell(self, run):
        return data(run.lease_owner) if run.lease_owner else "-"

    @admin.display(description=gettext_lazy("workflow"), ordering="workflow_name")
    def workflow(self, run):
        return data(breakable(f"{run.workflow_name} v{run.workflow_version}"))

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, run):
        """The engine's status, and under it the workflow's ``stage`` (its human status)."""
        stage = (run.attributes or {}).get("stage")
        if stage is None or stage == "":
            return badge(run.status)
        return format_html(
            '{}<div class="durable-stage" translate="no">{}</div>', badge(run.status), stage
        )

    @admin.display(description=gettext_lazy("attributes"))
    def attributes_json(self, run):
        return json_block(run.attributes) if run.attributes else "-"

    @admin.display(description=gettext_lazy("parent"))
    def parent_link(self, run):
        return run_link(run.parent_id) if run.parent_id else "-"

    @admin.display(description=gettext_lazy("children"))
    def children_links(self, run):
        rows = list(
            run.children.order_by("created_at", "id").values_list("id", "status")[
                : CHILDREN_SHOWN + 1
            ]
        )
        if not rows:
            return "-"
        links = format_html_join(
            "",
            "<li>{} {}</li>",
            ((run_link(child_id), badge(status)) for child_id, status in rows[:CHILDREN_SHOWN]),
        )
        more = ""
        if len(rows) > CHILDREN_SHOWN:
            more = format_html(
                '<li><a href="{}?parent__id__exact={}">{}</a></li>',
                reverse("admin:durable_workflowrun_changelist"),
                run.id,
                _("all children"),
            )
        return format_html('<ul class="durable-children">{}{}</ul>', links, more)

    @admin.display(description=gettext_lazy("forked from"))
    def forked_from_link(self, run):
        if not run.forked_from_id:
            return "-"
        return format_html(
            _("{run} at position {position}"),
            run=run_link(run.forked_from_id),
            position=run.fork_position,
        )

    @admin.display(description=gettext_lazy("forks"))
    def forks_links(self, run):
        rows = list(
            run.forks.order_by("created_at", "id").values_list("id", "fork_position", "status")
        )
        if not rows:
            return "-"
        return format_html(
            '<ul class="durable-forks">{}</ul>',
            format_html_join(
                "",
                "<li>{} {}</li>",
                (
                    (
                        format_html(
                            _("{run} at position {position}"),
                            run=run_link(fork_id),
                            position=position,
                        ),
                        badge(status),
                    )
                    for fork_id, position, status in rows
                ),
            ),
        )

    @admin.display(description=gettext_lazy("continue-as-new chain"))
    def chain_links(self, run):
        chain = selectors.run_chain(run)
        if not chain:
            return "-"
        return format_html(
            '<ol class="durable-chain">{}</ol>',
            format_html_join(
                "",
                "<li>{}</li>",
                (
                    (
                        format_html('<strong translate="no">{}</strong>', run_id)
                        if run_id == run.id
                        else run_link(run_id),
                    )
                    for run_id in chain
                ),
            ),
        )

    @admin.display(description=gettext_lazy("input"))
    def input_json(self, run):
        return json_block(run.input)

    @admin.display(description=gettext_lazy("result"))
    def result_json(self, run):
        return json_block(run.result) if run.result is not None else "-"

    @admin.display(description=gettext_lazy("error"))
    def error_json(self, run):
        return json_block(run.error) if run.error is not None else "-"

    # --- the run page: journal timeline, signals, audit trail, action buttons ---

    def change_view(self, request, object_id, form_url="", extra_context=None):
        run = get_object_or_404(WorkflowRun, pk=unquote(object_id))
        journal = list(run.journal.order_by("position"))
        can_operate = self.has_operate_permission(request)
        extra_context = {
            **(extra_context or {}),
            "run": run,
            "divergence": run.error.get("message")
            if run.status == RunStatus.BLOCKED and run.error
            else "",
            "journal": [journal_row(entry) for entry in journal],
            "timeline": timeline_svg(run, journal),
            "signals": list(run.signals.order_by("id")),
            "audit_events": [
                audit_row(event) for event in run.audit_events.order_by("created_at", "id")
            ],
            "can_operate": can_operate,
            "run_links": run_links(run, request),
            "can_cancel": can_operate and run.allows("cancel"),
            # a graceful cancel needs a body that can still run (services.run_cancel)
            "can_cancel_gracefully": can_operate and run.allows("cancel") and run.allows("claim"),
            "can_retry": can_operate and run.allows("retry"),
            "can_wake": can_operate and run.allows("wake"),
            "can_signal": can_operate and not run.is_finished,
            "operate_urls": {
                name: reverse(f"admin:durable_workflowrun_{name}", args=[quote(run.pk)])
                for name in ("cancel", "retry", "wake", "signal", "fork")
            },
        }
        return super().change_view(request, object_id, form_url, extra_context)

    def get_urls(self):
        operate = [
            path(
                "bulk/", self.admin_site.admin_view(self.bulk_view), name="durable_workflowrun_bulk"
            ),
            path(
                "<path:object_id>/cancel/",
                self.admin_site.admin_view(self.cancel_view),
                name="durable_workflowrun_cancel",
            ),
            path(
                "<path:object_id>/retry/",
                self.admin_site.admin_view(self.retry_view),
                name="durable_workflowrun_retry",
            ),
            path(
                "<path:object_id>/wake/",
                self.admin_site.admin_view(self.wake_view),
                name="durable_workflowrun_wake",
            ),
            path(
                "<path:object_id>/signal/",
                self.admin_site.admin_view(self.signal_view),
                name="durable_workflowrun_signal",
            ),
            path(
                "<path:object_id>/fork/",
                self.admin_site.admin_view(self.fork_view),
                name="durable_workflowrun_fork",
            ),
        ]
        return operate + super().get_urls()

    def bulk_view(self, request):
        return bulk.bulk_view(self, request)

    def fork_view(self, request, object_id):
        return fork.fork_view(self, request, object_id)

    def _check_operate(self, request):
        if not self.has_operate_permission(request):
            raise PermissionDenied

    def _run_page(self, run_id: str):
        return HttpResponseRedirect(
            reverse("admin:durable_workflowrun_change", args=[quote(run_id)])
        )

    def _perform(self, request, object_id, done: str, call):
        """``done``: the message once it worked, with ``%(run)s`` for the run's id."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        self._check_operate(request)
        run_id = unquote(object_id)
        actor, audit = request_audit(request, via="admin")
        try:
            call(run_id, actor, audit)
        except DurableError as error:
            self.message_user(request, str(error), messages.ERROR)
        else:
            self.message_user(request, done % {"run": run_id}, messages.SUCCESS)
        return self._run_page(run_id)

    def cancel_view(self, request, object_id):
        reason = request.POST.get("reason", "")[:1000]
        graceful = request.POST.get("graceful") == "on"
        done = (
            _("Run %(run)s asked to cancel: the workflow cleans up first.")
            if graceful
            else _("Run %(run)s cancelled.")
        )
        return self._perform(
            request,
            object_id,
            done,
            lambda run_id, actor, audit: services.run_cancel(
                run_id, reason=reason, graceful=graceful, actor=actor, audit=audit
            ),
        )

    def retry_view(self, request, object_id):
        return self._perform(
            request,
            object_id,
            _("Run %(run)s sent back to pending."),
            lambda run_id, actor, audit: services.run_retry(run_id, actor=actor, audit=audit),
        )

    def wake_view(self, request, object_id):
        nothing = self._nothing_to_wake(unquote(object_id))
        return self._perform(
            request,
            object_id,
            nothing.replace("%", "%%") or _("Run %(run)s woken."),
            lambda run_id, actor, audit: services.run_wake(run_id, actor=actor, audit=audit),
        )

    def signal_view(self, request, object_id):
        self._check_operate(request)
        run = get_object_or_404(WorkflowRun, pk=unquote(object_id))
        form = SignalForm(request.POST) if request.method == "POST" else SignalForm()
        if request.method == "POST" and form.is_valid():
            actor, audit = request_audit(request, via="admin")
            try:
                signal = services.signal_send(
                    run.pk,
                    form.cleaned_data["name"],
                    form.cleaned_data["payload"],
                    dedupe_key=form.cleaned_data["dedupe_key"],
                    actor=actor,
                    audit=audit,
                )
            except DurableError as error:
                form.add_error(None, str(error))
            else:
                self.message_user(
                    request,
                    _("Signal %(name)s (#%(id)s) recorded for run %(run)s.")
                    % {"name": repr(signal.name), "id": signal.pk, "run": run.pk},
                    messages.SUCCESS,
                )
                return self._run_page(run.pk)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Send a signal to %(run)s") % {"run": run.pk},
            "opts": self.opts,
            "run": run,
            "form": form,
            "waiting_for": run.waiting_for,
        }
        return TemplateResponse(request, "admin/durable/workflowrun/signal_form.html", context)

    # --- bulk actions on the list ---

    def _bulk(self, request, queryset, action: str, call, *, unchanged=None):
        """``unchanged(run_id)``: why the action will change nothing on that run (or "");
        such runs are still acted on, and listed apart instead of counted as done."""
        actor, audit = request_audit(request, via="admin")
        acted, refused, idle = 0, [], []
        for run_id in queryset.values_list("pk", flat=True):
            why = unchanged(run_id) if unchanged else ""
            try:
                call(run_id, actor, audit)
            except DurableError as error:
                refused.append(str(error))
                continue
            if why:
                idle.append(why)
            else:
                acted += 1
        if acted:
            self.message_user(request, bulk.done_message(action, acted) + ".", messages.SUCCESS)
        for message in (idle + refused)[:20]:
            self.message_user(request, message, messages.WARNING)

    @admin.action(description=gettext_lazy("Cancel selected runs"), permissions=["operate"])
    def cancel_selected(self, request, queryset):
        self._bulk(
            request,
            queryset,
            "cancel",
            lambda run_id, actor, audit: services.run_cancel(
                run_id, reason="cancelled from the admin", actor=actor, audit=audit
            ),
        )

    @admin.action(
        description=gettext_lazy("Retry selected runs (failed or blocked)"), permissions=["operate"]
    )
    def retry_selected(self, request, queryset):
        self._bulk(
            request,
            queryset,
            "retry",
            lambda run_id, actor, audit: services.run_retry(run_id, actor=actor, audit=audit),
        )

    @admin.action(
        description=gettext_lazy("Wake selected runs now (sleeps and back-offs)"),
        permissions=["operate"],
    )
    def wake_selected(self, request, queryset):
        self._bulk(
            request,
            queryset,
            "wake",
            lambda run_id, actor, audit: services.run_wake(run_id, actor=actor, audit=audit),
            unchanged=self._nothing_to_wake,
        )

    @staticmethod
    def _nothing_to_wake(run_id: str) -> str:
        """Why a wake changes nothing on this run, said before it is done ("" when it does)."""
        waiting_for = selectors.run_signal_wait_only(run_id)
        if not waiting_for:
            return ""
        return _(
            "Run %(run)s not woken: it waits for %(signal)s and has no sleep or back-off to "
            "end (a wake never ends a wait for a signal early; it was only looked at again)."
        ) % {"run": run_id, "signal": repr(waiting_for)}


class AuditActionFilter(admin.SimpleListFilter):
    """The audit rows keep the action's code: the filter offers its label."""

    title = gettext_lazy("action")
    parameter_name = "action"

    def lookups(self, request, model_admin):
        return AuditAction.choices

    def queryset(self, request, queryset):
        return queryset.filter(action=self.value()) if self.value() else queryset


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "run_link", "action_label", "actor_cell", "ip"]
    list_filter = [AuditActionFilter]
    search_fields = ["=run__id", "actor"]
    list_select_related = False
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    readonly_fields = ["created_at", "run_link", "action_label", "actor_cell", "detail_json"]
    fields = readonly_fields

    @admin.display(description=gettext_lazy("run"), ordering="run_id")
    def run_link(self, event):
        return run_link(event.run_id)

    @admin.display(description=gettext_lazy("action"), ordering="action")
    def action_label(self, event):
        return label(AuditAction, event.action)

    @admin.display(description=gettext_lazy("actor"), ordering="actor")
    def actor_cell(self, event):
        return data(event.actor)

    @admin.display(description=gettext_lazy("IP"))
    def ip(self, event):
        return (event.detail or {}).get("ip", "")

    @admin.display(description=gettext_lazy("detail"))
    def detail_json(self, event):
        return json_block(event.detail)


@admin.register(LimitTicket)
class LimitTicketAdmin(ReadOnlyAdmin):
    """Who holds a limit and who waits in line for it (``durable.limit``), oldest first."""

    list_display = [
        "limit_name",
        "limit_key",
        "state",
        "run_link",
        "position",
        "queue",
        "queued_at",
        "granted_at",
        "wake_at",
    ]
    list_filter = ["limit_name", "state"]
    search_fields = ["=run__id", "=limit_key"]
    list_select_related = False
    show_full_result_count = False
    ordering = ["queued_at", "id"]

    @admin.display(description=gettext_lazy("run"), ordering="run_id")
    def run_link(self, ticket):
        return run_link(ticket.run_id)
