from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    default_auto_field = "django.db.models.BigAutoField"
