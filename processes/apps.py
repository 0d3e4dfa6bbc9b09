from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProcessesConfig(AppConfig):
    name = "processes"
    verbose_name = _("Business processes")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The WhatsApp channel imports no process: onboarding tells it which messages are its.
        from processes.onboarding.changes import onboarding_route_change
        from processes.onboarding.services import onboarding_route_message
        from processes.whatsapp.routing import register_inbound_router

        register_inbound_router(onboarding_route_change)   # edits and deletions, before anything reads a type
        register_inbound_router(onboarding_route_message)
