"""Django's admin autodiscovery imports ``<app>.admin``: the engine's admin pages are
``durable.surfaces.admin``."""

from durable.surfaces import admin  # noqa: F401
