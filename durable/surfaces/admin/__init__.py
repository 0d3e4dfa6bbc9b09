"""The operators' admin: runs (``runs``), schedules (``schedules``), archived runs and
batches (``archive``) and the bulk operation (``bulk``), on shared display helpers
(``display``). Django's autodiscovery imports ``durable.admin``, which imports this
package, which registers them all.

Apps built on the engine import what they extend from here: ``register_run_links``,
``ReadOnlyAdmin``, ``run_link``, and ``data`` / ``json_block`` for cells that are data, never
translated.
"""

from durable.surfaces.admin import archive, runs, schedules  # noqa: F401 (registered on import)
from durable.surfaces.admin.display import (
    ReadOnlyAdmin,
    badge,
    data,
    json_block,
    label,
    pretty_json,
    run_link,
    stamp_column,
)
from durable.surfaces.admin.runs import (
    OPERATE_PERMISSION,
    WorkflowRunAdmin,
    register_run_links,
    run_links,
)

__all__ = [
    "OPERATE_PERMISSION",
    "ReadOnlyAdmin",
    "WorkflowRunAdmin",
    "archive",
    "badge",
    "data",
    "json_block",
    "label",
    "pretty_json",
    "register_run_links",
    "run_link",
    "run_links",
    "runs",
    "schedules",
    "stamp_column",
]
