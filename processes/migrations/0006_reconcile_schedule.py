"""Reconciliation runs from a durable schedule, no longer from a beat crontab.

Seeded here, not on app start or by the demo: a migration runs once per database on every
deploy path (production, a laptop, CI), before any worker, and never again, so an operator
who pauses the schedule or moves its time keeps that choice across deploys; a write in
``AppConfig.ready()`` would run in every process and fight the operator; the demo alone
would leave production without it.

Each day at 00:30 UTC, as beat did, the schedule starts ``reconcile:<the day before>``; a
day missed while beat was down is started once when it is back (catch-up ``all``). The
first occurrence is the first 00:30 after this migration: earlier days were beat's.
"""
from django.db import migrations
from django.utils import timezone

from durable import chain
from durable.features import cron

NAME = "reconcile-daily"
FIELDS = {
    "name": NAME,
    "workflow_name": "reconcile",
    "cron": "30 0 * * *",
    "timezone": "UTC",
    "id_template": "reconcile:{day_before}",
    "args": ["{day_before}"],
    "kwargs": {},
    "catch_up": "all",
}
# ScheduleEvent's chained values, frozen as durable/schedule_models.py says them today.
CHAINED = ("action", "actor", "detail", "created_at")


def seed(apps, schema_editor):
    schedule_model = apps.get_model("durable", "Schedule")
    event_model = apps.get_model("durable", "ScheduleEvent")
    if schedule_model.objects.filter(name=NAME).exists():
        return
    now = timezone.now()
    schedule = schedule_model.objects.create(
        **FIELDS, paused=False, next_fire_at=cron.after(FIELDS["cron"], FIELDS["timezone"], now).at,
        created_at=now, updated_at=now)
    # Historical models have no ChainedAudit.save(): the first link is written by hand.
    event = event_model(schedule=schedule, action="create", actor="migration:processes.0006",
                        detail={**FIELDS, "paused": False, "replaces": "beat entry processes-reconcile-yesterday"},
                        created_at=now, chain_seq=1, prev_hash=chain.GENESIS)
    event.row_hash = chain.row_digest(event, chain.GENESIS, parent="schedule", fields=CHAINED)
    if any(field.name == "row_mac" for field in event_model._meta.fields):  # durable 0019 ran first
        event.row_mac = chain.seal(event.row_hash)
    event.save()


class Migration(migrations.Migration):

    dependencies = [
        ("processes", "0005_pending_statuses"),
        ("durable", "0006_schedules"),
    ]

    operations = [migrations.RunPython(seed, migrations.RunPython.noop)]
