from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ProcessesConfig(AppConfig):
    name = "processes"
    verbose_name = _("Business processes")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The WhatsApp channel imports no process: onboarding tells it which messages are its.
        from durable.surfaces.health import register_health_check
        from durable.surfaces.metrics import register_collector
        from processes.onboarding.changes import changes_waiting_replay, onboarding_route_change
        from processes.onboarding.services import onboarding_route_message
        from processes.whatsapp.checks import register_checks
        from processes.whatsapp.health import whatsapp_health
        from processes.whatsapp.metrics import WhatsAppCollector
        from processes.whatsapp.routing import register_after_routed, register_inbound_router

        register_inbound_router(
            onboarding_route_change
        )  # edits and deletions, before anything reads a type
        register_after_routed(changes_waiting_replay)
        register_inbound_router(onboarding_route_message)
        # Templates and the account: checked at startup, in `durable health` and on /metrics.
        register_checks()
        register_health_check(whatsapp_health)
        register_collector(WhatsAppCollector())
