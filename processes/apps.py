from django.apps import AppConfig


class ProcessesConfig(AppConfig):
    name = "processes"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The WhatsApp channel imports no process: onboarding tells it which messages are its.
        from processes.onboarding.services import onboarding_route_message
        from processes.whatsapp.routing import register_inbound_router

        register_inbound_router(onboarding_route_message)
