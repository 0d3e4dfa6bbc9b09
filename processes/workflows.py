"""Imported by the engine at startup so runs find the processes' workflow code by name
(and the compliance case pages and evidence packs find onboarding's panels and evidence)."""

from processes.billing import workflow as billing  # noqa: F401
from processes.onboarding import evidence as onboarding_evidence  # noqa: F401
from processes.onboarding import panels as onboarding_panels  # noqa: F401
from processes.onboarding import workflow as onboarding  # noqa: F401
from processes.reconciliation import workflow as reconciliation  # noqa: F401
