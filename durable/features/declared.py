"""Schedules declared in code: each app's ``schedules.py`` lists ``SCHEDULES``; ``durable
schedule sync`` makes the database say the same, and a system check reports where it does not.

Only what a schedule starts and when is declared (workflow, cron, zone, id template, input,
catch-up). Whether it is paused stays the operator's: a sync never resumes a schedule an
operator paused, and never deletes one that is declared nowhere (it says so).
"""

import importlib
from dataclasses import dataclass, field

from django.apps import apps

from durable.features import schedules
from durable.models.schedules import CatchUp, Schedule


@dataclass(frozen=True)
class DeclaredSchedule:
    name: str
    workflow: str
    cron: str
    id_template: str
    timezone: str = "UTC"
    args: list = field(default_factory=list)
    kwargs: dict = field(default_factory=dict)
    catch_up: str = CatchUp.ALL

    def fields(self) -> dict:
        """The schedule's editable fields, checked as a new schedule's are (ScheduleInvalid)."""
        return schedules.schedule_check(
            name=self.name,
            workflow=self.workflow,
            cron_expression=self.cron,
            timezone=self.timezone,
            id_template=self.id_template,
            args=list(self.args),
            kwargs=dict(self.kwargs),
            catch_up=self.catch_up,
        )


@dataclass
class Drift:
    """How the database differs from a declaration: missing, or {field: [in the database, in
    code]}."""

    name: str
    missing: bool = False
    changed: dict = field(default_factory=dict)


def declared_schedules() -> list[DeclaredSchedule]:
    """Every app's ``schedules.SCHEDULES``, by name; ValueError for a name declared twice."""
    found: dict[str, tuple[str, DeclaredSchedule]] = {}
    for config in apps.get_app_configs():
        module_name = f"{config.name}.schedules"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue
        for declared in getattr(module, "SCHEDULES", []):
            if declared.name in found:
                raise ValueError(
                    f"schedule {declared.name!r} is declared twice: in {found[declared.name][0]} "
                    f"and in {module_name}"
                )
            found[declared.name] = (module_name, declared)
    return [declared for _, declared in sorted(found.values(), key=lambda pair: pair[1].name)]


def schedules_drift(declared: list[DeclaredSchedule] | None = None) -> list[Drift]:
    """Where the database differs from the declarations (ScheduleInvalid for a declaration
    that could not be created)."""
    drifts = []
    for spec in declared if declared is not None else declared_schedules():
        wanted = spec.fields()
        stored = Schedule.objects.filter(name=spec.name).first()
        if stored is None:
            drifts.append(Drift(spec.name, missing=True))
            continue
        changed = {
            name: [getattr(stored, name), wanted[name]]
            for name in schedules.EDITABLE
            if getattr(stored, name) != wanted[name]
        }
        if changed:
            drifts.append(Drift(spec.name, changed=changed))
    return drifts


def undeclared_schedules(declared: list[DeclaredSchedule] | None = None) -> list[str]:
    """Schedules in the database that no app declares (created by hand, or a declaration
    removed)."""
    names = {spec.name for spec in (declared if declared is not None else declared_schedules())}
    return list(
        Schedule.objects.exclude(name__in=names).order_by("name").values_list("name", flat=True)
    )


def schedules_sync(
    *,
    actor: str,
    audit: dict | None = None,
    dry_run: bool = False,
    declared: list[DeclaredSchedule] | None = None,
) -> list[Drift]:
    """Create the declared schedules missing from the database and change those that differ,
    each through the schedules' services (checked, audited); return what differed.
    ``declared``: these declarations instead of the apps' (``declared_schedules``)."""
    declared = declared if declared is not None else declared_schedules()
    drifts = schedules_drift(declared)
    if dry_run:
        return drifts
    by_name = {spec.name: spec for spec in declared}
    for drift in drifts:
        spec = by_name[drift.name]
        if drift.missing:
            schedules.schedule_create(
                spec.name,
                spec.workflow,
                cron_expression=spec.cron,
                timezone=spec.timezone,
                id_template=spec.id_template,
                args=list(spec.args),
                kwargs=dict(spec.kwargs),
                catch_up=spec.catch_up,
                actor=actor,
                audit={**(audit or {}), "sync": True},
            )
        else:
            schedules.schedule_update(
                spec.name,
                actor=actor,
                audit={**(audit or {}), "sync": True},
                **{name: new for name, (_, new) in drift.changed.items()},
            )
    return drifts
