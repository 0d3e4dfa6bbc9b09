"""ASGI entry point."""

import os

from django.core.asgi import get_asgi_application

from config import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
tracing.install(service="durable-web")  # only when OTEL_TRACES_EXPORTER names an exporter
application = get_asgi_application()
