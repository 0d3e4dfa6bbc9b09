"""The operators' admin: runs (``runs``), schedules (``schedules``), archived runs and
batches (``archive``) and the bulk operation (``bulk``), on shared display helpers
(``display``). Django's autodiscovery imports this package, which registers them all.

Apps built on the engine import what they extend from here: ``register_run_links`` and
``ReadOnlyAdmin``.
"""
from durable.admin import archive, runs, schedules  # noqa: F401  (each registers its ModelAdmins)
from durable.admin.display import ReadOnlyAdmin, badge, pretty_json, stamp_column  # noqa: F401
from durable.admin.runs import OPERATE_PERMISSION, WorkflowRunAdmin, register_run_links, run_links  # noqa: F401
