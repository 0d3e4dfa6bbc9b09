"""What a fork of a run keeps of its journal and takes again of its signals
(``services.run_fork``): the rules, shared by the fork and its preview; no writes."""

from django.db.models import Q

from durable.errors import InvalidFork
from durable.models import EntryKind, EntryStatus, JournalEntry, Signal
from durable.runtime import children


def check_position(at_position) -> None:
    if isinstance(at_position, bool) or not isinstance(at_position, int) or at_position < 0:
        raise InvalidFork(f"a fork's position is a whole number of at least 0, not {at_position!r}")


def kept_entries(run_id: str, journal: list[JournalEntry], at_position: int) -> list[JournalEntry]:
    """The entries before ``at_position``, in order; InvalidFork unless each is a finished fact
    a new run may own: a completed or failed call, and no child run (a child has one parent)."""
    check_position(at_position)
    journal = sorted(journal, key=lambda entry: entry.position)
    if at_position > len(journal):
        held = (
            f"positions 0 to {len(journal) - 1}; at most {len(journal)} runs on from its end"
            if journal
            else "the only position is 0"
        )
        raise InvalidFork(
            f"run {run_id!r} has {len(journal)} journal entr{'y' if len(journal) == 1 else 'ies'} "
            f"({held}): position {at_position} is past them"
        )
    kept = [entry for entry in journal if entry.position < at_position]
    for entry in kept:
        if entry.kind == EntryKind.CHILD:
            raise InvalidFork(
                f"run {run_id!r} started child run {(entry.result or {}).get('id')!r} at position "
                f"{entry.position}: a fork cannot share it; fork at {entry.position} or before"
            )
        if entry.status not in (EntryStatus.COMPLETED, EntryStatus.FAILED):
            raise InvalidFork(
                f"the entry at position {entry.position} ({entry.kind} {entry.name!r}) is "
                f"{entry.status}, not finished; fork at {entry.position} or before"
            )
    return kept


def signals_taken_again(run_id: str, at_position: int) -> list[Signal]:
    """The run's signals a fork at ``at_position`` takes again, as they arrived: those still
    pending, and those taken at or after the position (the ones before it are in the copied
    journal). Children's outcomes are not among them: a fork never shares the children."""
    return list(
        Signal.objects.filter(run_id=run_id)
        .filter(Q(consumed_position__isnull=True) | Q(consumed_position__gte=at_position))
        .exclude(name__startswith=children.SIGNAL_PREFIX)
        .order_by("id")
    )
