"""The engine's tables: a run and what it recorded (``runs``), schedules (``schedules``),
the archive of finished runs (``archive``) and the REST API's tokens (``tokens``). One
package so Django registers them all, and the lowest layer of the engine above its base:
nothing here imports the runtime.

Apps never import these (``.importlinter``): they ask ``durable.services`` and
``durable.selectors``, and a foreign key names ``"durable.WorkflowRun"``.
"""

from durable.models.archive import (
    ArchiveBatch,
    ArchivedAuditEvent,
    ArchivedJournalEntry,
    ArchivedRun,
    ArchivedSignal,
)
from durable.models.runs import (
    ACTIVE_STATUSES,
    FINISHED_STATUSES,
    AuditAction,
    AuditEvent,
    EntryKind,
    EntryStatus,
    JournalEntry,
    LimitTicket,
    RunStatus,
    Signal,
    TicketState,
    WorkflowRun,
)
from durable.models.schedules import CatchUp, Schedule, ScheduleAction, ScheduleEvent
from durable.models.tokens import ApiToken, TokenScope

__all__ = [
    "ACTIVE_STATUSES",
    "FINISHED_STATUSES",
    "ApiToken",
    "ArchiveBatch",
    "ArchivedAuditEvent",
    "ArchivedJournalEntry",
    "ArchivedRun",
    "ArchivedSignal",
    "AuditAction",
    "AuditEvent",
    "CatchUp",
    "EntryKind",
    "EntryStatus",
    "JournalEntry",
    "LimitTicket",
    "RunStatus",
    "Schedule",
    "ScheduleAction",
    "ScheduleEvent",
    "Signal",
    "TicketState",
    "TokenScope",
    "WorkflowRun",
]
