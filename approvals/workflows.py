"""Imported at startup by the engine (durable autodiscovers ``workflows`` modules): registers
the approvals app's demo process. The request_approval helper lives in approvals/workflow.py."""

from approvals import demo  # noqa: F401
