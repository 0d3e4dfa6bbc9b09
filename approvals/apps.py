from django.apps import AppConfig


class ApprovalsConfig(AppConfig):
    name = "approvals"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from approvals import receivers  # noqa: F401  (connects to durable's hooks)
