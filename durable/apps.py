"""App config: imports every app's ``workflows`` module so runs find their code by name.

Also registers the determinism system check and, in strict mode, the runtime guards.
"""

import importlib
import importlib.util

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules
from django.utils.translation import gettext_lazy as _


class DurableConfig(AppConfig):
    name = "durable"
    verbose_name = _("Durable workflows")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from durable import conf, services
        from durable.runtime import children, registry, strict
        from durable.surfaces import checks

        checks.register()
        children.reserve()
        registry.reserve_dedupe_prefix(services.UPDATE_KEY_PREFIX, owner=children.OWNER)
        if strict.enabled():  # before workflow modules import `from time import time` & co.
            strict.install()
        if importlib.util.find_spec("celery") is not None:
            # Its receivers carry the trace into every message this process sends: the web
            # process too, which runs no task and would otherwise never import them.
            importlib.import_module("durable.tasks")
        autodiscover_modules("workflows")
        for module in conf.workflow_modules():
            importlib.import_module(module)
