"""URLs of the durable app: the REST API under /api/ and the Prometheus endpoint /metrics.

Run ids may contain ':', '/', newlines, anything: the ``run_id`` converter matches every
character (``path`` stops at a newline). The action routes come first, and a GET on
them falls back to the detail of the longer id.
"""

from django.http import HttpResponse
from django.urls import include, path, register_converter
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from durable.surfaces import api, bulk_api, metrics, schedules_api


class RunIdConverter:
    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(RunIdConverter, "run_id")


class _Page:
    """The docs pages render HTML through a template; DRF's OPTIONS answer (a metadata dict)
    has no template, so OPTIONS answered 500. It says which methods there are, and no more."""

    def options(self, request, *args, **kwargs):
        return HttpResponse(headers={"Allow": ", ".join(self.allowed_methods)})


class SwaggerPage(_Page, SpectacularSwaggerSplitView):
    """Swagger UI with its script and styles served as files, as the Content-Security-Policy
    wants. (Redoc is not offered: its bundle fetches web fonts from elsewhere and writes
    inline styles.)"""

    template_name = "durable/swagger_ui.html"


api_patterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SwaggerPage.as_view(url_name="api-schema"), name="api-docs"),
    path("runs/", api.RunCollectionView.as_view(), name="api-runs"),
    path("bulk/", bulk_api.BulkView.as_view(), name="api-bulk"),
    path("bulk/confirm/", bulk_api.BulkConfirmView.as_view(), name="api-bulk-confirm"),
    path("runs/<run_id:run_id>/signals/", api.RunSignalView.as_view(), name="api-run-signal"),
    path("runs/<run_id:run_id>/cancel/", api.RunCancelView.as_view(), name="api-run-cancel"),
    path("runs/<run_id:run_id>/retry/", api.RunRetryView.as_view(), name="api-run-retry"),
    path("runs/<run_id:run_id>/wake/", api.RunWakeView.as_view(), name="api-run-wake"),
    path("runs/<run_id:run_id>/fork/", api.RunForkView.as_view(), name="api-run-fork"),
    path(
        "runs/<run_id:run_id>/queries/<str:name>/", api.RunQueryView.as_view(), name="api-run-query"
    ),
    path(
        "runs/<run_id:run_id>/updates/<str:name>/",
        api.RunUpdateView.as_view(),
        name="api-run-update",
    ),
    path("runs/<run_id:run_id>/", api.RunDetailView.as_view(), name="api-run"),
    path("schedules/", schedules_api.ScheduleCollectionView.as_view(), name="api-schedules"),
    path(
        "schedules/<str:name>/pause/",
        schedules_api.SchedulePauseView.as_view(),
        name="api-schedule-pause",
    ),
    path(
        "schedules/<str:name>/resume/",
        schedules_api.ScheduleResumeView.as_view(),
        name="api-schedule-resume",
    ),
    path(
        "schedules/<str:name>/trigger/",
        schedules_api.ScheduleTriggerView.as_view(),
        name="api-schedule-trigger",
    ),
]

urlpatterns = [
    path("api/", include(api_patterns)),
    path("metrics", metrics.metrics_view, name="metrics"),
]
