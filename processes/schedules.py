"""The schedules the processes run on (``durable schedule sync`` keeps the database in step;
``manage.py check --database default`` says where it is not)."""

from durable.features.declared import DeclaredSchedule

SCHEDULES = [
    # Each day at 00:30 UTC, the reconciliation of the day before; a day missed while the
    # sweep was down is started once when it is back (first seeded by migration 0006).
    DeclaredSchedule(
        name="reconcile-daily",
        workflow="reconcile",
        cron="30 0 * * *",
        id_template="reconcile:{day_before}",
        args=["{day_before}"],
    ),
]
