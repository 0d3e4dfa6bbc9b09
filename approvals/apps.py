from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ApprovalsConfig(AppConfig):
    name = "approvals"
    verbose_name = _("Approvals")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from approvals import receivers  # noqa: F401  (connects to durable's hooks)
        from approvals.metrics import ApprovalsCollector
        from approvals.services import SIGNAL_KEY_OWNER, SIGNAL_KEY_PREFIX
        from durable import reserve_dedupe_prefix
        from durable.surfaces.metrics import register_collector

        # A decision's signal key is ours alone: a hand-sent signal with it would turn the
        # reviewer's real decision into a silent duplicate.
        reserve_dedupe_prefix(SIGNAL_KEY_PREFIX, owner=SIGNAL_KEY_OWNER)
        register_collector(ApprovalsCollector())
