"""Root URLs: each app mounts its own."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from config.views import favicon

urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("", include("durable.urls")),
    path("", include("processes.urls")),
    path("", include("approvals.urls")),
    path("", RedirectView.as_view(pattern_name="approval_queue", permanent=False)),
]
