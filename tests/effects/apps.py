from django.apps import AppConfig


class EffectsConfig(AppConfig):
    name = "tests.effects"
    label = "effects"
    default_auto_field = "django.db.models.BigAutoField"
