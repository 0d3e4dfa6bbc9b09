"""The admin, where runs, their journal and their signals are listed (Durable workflows)."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
