"""Durable schedules: rows fired by the sweep, each occurrence once, whatever the sweep missed."""

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from durable import days, hours, minutes, workflow
from durable.errors import WorkflowNotFound
from durable.features.cron import ScheduleInvalid
from durable.features.schedules import (
    fire_due,
    schedule_create,
    schedule_pause,
    schedule_resume,
    schedule_update,
)
from durable.models import AuditEvent, WorkflowRun
from durable.models.schedules import Schedule, ScheduleEvent
from durable.tasks import tick
from durable.testing import fake_clock
from tests.durable.workflows import record

pytestmark = pytest.mark.django_db

# Tuesday 2026-05-05, 12:00 UTC.
NOON = datetime(2026, 5, 5, 12, 0, tzinfo=UTC)


@workflow(name="daily_report")
def daily_report(day: str) -> str:
    return workflow.step(record, f"report {day}", name="report")


def report_ids() -> list[str]:
    return sorted(
        WorkflowRun.objects.filter(workflow_name="daily_report").values_list("id", flat=True)
    )


def daily(
    catch_up: str = "all",
    *,
    cron: str = "0 0 * * *",
    tz: str = "UTC",
    template: str = "report:{date}",
    name: str = "report-daily",
):
    return schedule_create(
        name,
        "daily_report",
        cron_expression=cron,
        timezone=tz,
        id_template=template,
        args=["{date}"],
        catch_up=catch_up,
        actor="test",
    )


def test_three_days_without_a_sweep_start_each_missed_day_once():
    with fake_clock(NOON) as clock:
        daily("all")
        clock.advance(days(3))  # beat is down: no sweep for three days

        tick()
        tick()  # and again: nothing twice

    assert report_ids() == ["report:2026-05-06", "report:2026-05-07", "report:2026-05-08"]


def test_each_occurrence_passes_its_own_date_to_the_workflow():
    with fake_clock(NOON) as clock:
        daily("all")
        clock.advance(days(2))
        tick()

    assert WorkflowRun.objects.get(pk="report:2026-05-06").input == {
        "args": ["2026-05-06"],
        "kwargs": {},
    }
    assert WorkflowRun.objects.get(pk="report:2026-05-07").input == {
        "args": ["2026-05-07"],
        "kwargs": {},
    }


def test_latest_starts_only_the_most_recent_missed_occurrence():
    with fake_clock(NOON) as clock:
        daily("latest")
        clock.advance(days(3))

        tick()

    assert report_ids() == ["report:2026-05-08"]
    assert (
        ScheduleEvent.objects.get(schedule__name="report-daily", action="fire").detail[
            "skipped_since"
        ]
        == "2026-05-06T00:00:00+00:00"
    )


def test_skip_starts_no_missed_occurrence_and_fires_the_next_one():
    with fake_clock(NOON) as clock:
        schedule = daily("skip")
        clock.advance(days(3))
        tick()
        nothing_missed = report_ids()

        clock.advance(hours(12) + minutes(0.5))  # 00:00:30 on the 9th: on time
        tick()

    assert nothing_missed == []
    assert report_ids() == ["report:2026-05-09"]
    schedule.refresh_from_db()
    assert schedule.next_fire_at == datetime(2026, 5, 10, tzinfo=UTC)


def test_a_sweep_on_time_fires_the_occurrence_under_every_policy():
    with fake_clock(NOON) as clock:
        for policy in ("all", "latest", "skip"):
            schedule_create(
                f"report-{policy}",
                "daily_report",
                cron_expression="0 0 * * *",
                id_template=f"report:{policy}:{{date}}",
                args=["{date}"],
                catch_up=policy,
                actor="test",
            )
        clock.advance(hours(12) + timedelta(seconds=1))

        tick()

    assert report_ids() == [
        "report:all:2026-05-06",
        "report:latest:2026-05-06",
        "report:skip:2026-05-06",
    ]


def two_days_paused_then_resumed(clock) -> list[str]:
    """Two days of sweeps while the schedule is paused, then resumed and swept once at the
    next occurrence: the runs started while it was paused."""
    clock.advance(days(2))
    tick()
    while_paused = report_ids()
    schedule_resume("report-daily", actor="ana")  # 2026-05-07 12:00
    clock.advance(hours(12))
    tick()
    return while_paused


def test_a_paused_schedule_fires_nothing_and_resumes_from_the_next_occurrence():
    with fake_clock(NOON) as clock:
        daily("all")
        schedule_pause("report-daily", actor="ana", reason="bank maintenance")
        while_paused = two_days_paused_then_resumed(clock)

    assert while_paused == []
    assert report_ids() == ["report:2026-05-08"]


def test_pause_and_resume_are_audited_with_their_actor():
    with fake_clock(NOON):
        daily()
        schedule_pause("report-daily", actor="ana", reason="bank maintenance")
        schedule_pause("report-daily", actor="bia")  # already paused: nothing changes
        schedule_resume("report-daily", actor="carla")

    assert list(
        ScheduleEvent.objects.filter(schedule__name="report-daily")
        .order_by("chain_seq")
        .values_list("action", "actor")
    ) == [("create", "test"), ("pause", "ana"), ("resume", "carla")]
    assert (
        ScheduleEvent.objects.get(schedule__name="report-daily", action="pause").detail["reason"]
        == "bank maintenance"
    )


def test_sao_paulo_midnight_is_three_in_the_morning_utc_and_names_its_own_date():
    with fake_clock(NOON) as clock:
        daily(tz="America/Sao_Paulo")
        clock.advance(
            hours(14) + minutes(59)
        )  # 02:59 UTC on the 6th: 23:59 on the 5th in São Paulo
        tick()
        before_midnight = report_ids()

        clock.advance(minutes(1))  # 03:00 UTC: midnight of the 6th in São Paulo
        tick()

    assert before_midnight == []
    assert report_ids() == ["report:2026-05-06"]
    run = WorkflowRun.objects.get(pk="report:2026-05-06")
    assert run.created_at == datetime(2026, 5, 6, 3, 0, tzinfo=UTC)


def test_the_date_in_the_id_is_the_schedules_zone_not_utc():
    with fake_clock(datetime(2026, 5, 5, 12, tzinfo=UTC)) as clock:
        daily(
            cron="0 22 * * *", tz="America/Sao_Paulo"
        )  # 22:00 in São Paulo is 01:00 UTC the next day
        clock.advance(hours(13) + minutes(1))
        tick()

    assert report_ids() == ["report:2026-05-05"]


def test_a_time_the_clock_skips_at_the_start_of_summer_time_fires_when_the_clock_jumps():
    with fake_clock(
        datetime(2026, 3, 7, 12, tzinfo=UTC)
    ) as clock:  # New York: 8 March, 02:00 -> 03:00
        daily(cron="30 2 * * *", tz="America/New_York")
        clock.advance(days(1))
        tick()

    assert report_ids() == ["report:2026-03-08"]
    start = AuditEvent.objects.get(run_id="report:2026-03-08", action="start")
    assert start.detail["occurrence"] == "2026-03-08T07:00:00+00:00"  # 03:00 EDT


def test_an_occurrence_started_by_hand_is_not_started_again():
    from durable import services

    with fake_clock(NOON) as clock:
        schedule = daily()
        services.run_start("daily_report", "2026-05-06", id="report:2026-05-06", actor="ops")
        clock.advance(hours(13))

        tick()

    schedule.refresh_from_db()
    assert report_ids() == ["report:2026-05-06"]
    assert AuditEvent.objects.get(run_id="report:2026-05-06", action="start").actor == "ops"
    assert schedule.last_fired_at == datetime(2026, 5, 6, tzinfo=UTC)


def test_a_run_started_by_a_schedule_names_the_schedule_as_its_actor():
    with fake_clock(NOON) as clock:
        daily()
        clock.advance(hours(13))
        tick()

    event = AuditEvent.objects.get(run_id="report:2026-05-06", action="start")
    assert (event.actor, event.detail["schedule"], event.detail["occurrence"]) == (
        "schedule:report-daily",
        "report-daily",
        "2026-05-06T00:00:00+00:00",
    )


def test_a_long_outage_is_caught_up_in_batches_without_losing_an_occurrence(settings):
    settings.DURABLE_SCHEDULE_CATCH_UP_BATCH = 2
    with fake_clock(NOON) as clock:
        daily("all")
        clock.advance(days(5))

        first = fire_due()
        fire_due()
        fire_due()

    assert first == ["report:2026-05-06", "report:2026-05-07"]
    assert report_ids() == [f"report:2026-05-{day:02d}" for day in range(6, 11)]


def test_a_long_outage_is_caught_up_a_hundred_occurrences_per_sweep_by_default():
    with fake_clock(NOON) as clock:
        daily("all", cron="* * * * *", template="report:{datetime}")
        clock.advance(hours(2))  # 120 missed minutes

        first = fire_due()

    assert len(first) == 100
    assert first[-1] == "report:2026-05-05T13:40+00:00"


def test_a_longer_misfire_grace_lets_a_late_sweep_fire_the_occurrence_of_a_skip_schedule(settings):
    settings.DURABLE_SCHEDULE_MISFIRE_GRACE_SECONDS = 600
    with fake_clock(NOON) as clock:
        daily("skip")
        clock.advance(
            hours(12) + minutes(5)
        )  # five minutes late: missed under the default grace of a minute

        tick()

    assert report_ids() == ["report:2026-05-06"]


def test_the_schedule_placeholder_in_the_input_is_the_schedules_name():
    with fake_clock(NOON) as clock:
        schedule_create(
            "report-named",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="named:{date}",
            args=["{schedule} {date}"],
            actor="test",
        )
        clock.advance(hours(13))

        tick()

    assert WorkflowRun.objects.get(pk="named:2026-05-06").input == {
        "args": ["report-named 2026-05-06"],
        "kwargs": {},
    }


def test_a_schedule_passes_its_keyword_input_to_each_occurrence():
    with fake_clock(NOON) as clock:
        schedule_create(
            "report-by-keyword",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="kw:{date}",
            kwargs={"day": "{date}"},
            actor="test",
        )
        clock.advance(hours(13))

        tick()

    assert WorkflowRun.objects.get(pk="kw:2026-05-06").input == {
        "args": [],
        "kwargs": {"day": "2026-05-06"},
    }


def test_a_schedule_moved_to_another_hour_keeps_its_keyword_input():
    with fake_clock(NOON) as clock:
        schedule_create(
            "report-by-keyword",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="kw:{date}",
            kwargs={"day": "{date}"},
            actor="test",
        )
        schedule_update("report-by-keyword", actor="test", cron="0 6 * * *")
        clock.advance(hours(19))

        tick()

    assert WorkflowRun.objects.get(pk="kw:2026-05-06").input == {
        "args": [],
        "kwargs": {"day": "2026-05-06"},
    }


def test_a_schedule_created_paused_starts_nothing_until_it_is_resumed():
    with fake_clock(NOON) as clock:
        schedule_create(
            "report-daily",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="report:{date}",
            args=["{date}"],
            paused=True,
            actor="test",
        )
        while_paused = two_days_paused_then_resumed(clock)

    assert while_paused == []
    assert report_ids() == ["report:2026-05-08"]


def test_a_fire_is_audited_as_done_by_the_sweep():
    with fake_clock(NOON) as clock:
        daily()
        clock.advance(hours(13))

        tick()

    assert ScheduleEvent.objects.get(schedule__name="report-daily", action="fire").actor == "sweep"


def test_a_fire_is_audited_with_when_the_schedule_fires_next():
    with fake_clock(NOON) as clock:
        daily()
        clock.advance(hours(13))

        tick()

    event = ScheduleEvent.objects.get(schedule__name="report-daily", action="fire")
    assert event.detail["next_fire_at"] == "2026-05-07T00:00:00+00:00"


def test_a_sub_daily_cron_names_each_occurrence_by_its_time():
    with fake_clock(NOON) as clock:
        daily(cron="0 */6 * * *", template="report:{datetime}")
        clock.advance(hours(12))
        tick()

    assert report_ids() == ["report:2026-05-05T18:00+00:00", "report:2026-05-06T00:00+00:00"]


def test_a_schedule_whose_workflow_is_gone_records_why_and_the_sweep_goes_on():
    from durable import services

    with fake_clock(NOON) as clock:
        daily()
        Schedule.objects.filter(name="report-daily").update(workflow_name="retired_report")
        nap = services.run_start("nap", id="nap:schedules", actor="test")
        clock.advance(hours(13))

        picked = tick()

    schedule = Schedule.objects.get(name="report-daily")
    assert picked == [nap.id]
    assert (
        schedule.last_error == "WorkflowNotFound: no workflow named 'retired_report' is registered"
    )
    assert schedule.next_fire_at == datetime(2026, 5, 6, tzinfo=UTC)  # still due once fixed


def test_with_no_schedule_due_firing_costs_one_query(clock, django_assert_num_queries):
    daily()

    with django_assert_num_queries(1):
        assert fire_due() == []


# --- bad input is refused when it is written, with what is wrong ---


def test_a_bad_cron_expression_is_refused_with_the_field_at_fault():
    with pytest.raises(
        ScheduleInvalid, match=r"cron expression '61 0 \* \* \*' is not valid: Bad minute"
    ):
        daily(cron="61 0 * * *")

    assert not Schedule.objects.filter(name="report-daily").exists()


def test_a_cron_with_the_wrong_number_of_fields_is_refused():
    with pytest.raises(ScheduleInvalid, match="must have five fields"):
        daily(cron="0 0 * *")


def test_an_unknown_time_zone_is_refused():
    with pytest.raises(ScheduleInvalid, match="'America/Sao_Paul' is not an IANA time zone"):
        daily(tz="America/Sao_Paul")


def test_a_date_only_id_for_a_sub_daily_cron_is_refused():
    with pytest.raises(ScheduleInvalid, match="gives two occurrences the same run id"):
        daily(cron="0 */6 * * *", template="report:{date}")


def test_an_id_template_with_no_occurrence_placeholder_is_refused():
    with pytest.raises(ScheduleInvalid, match="names no occurrence placeholder"):
        daily(template="report:{schedule}")


def test_an_unknown_placeholder_is_refused_naming_the_known_ones():
    with pytest.raises(ScheduleInvalid, match=r"names \{day\}; the placeholders are \{date\}"):
        daily(template="report:{day}")


def test_an_unknown_catch_up_policy_is_refused_naming_the_policies(clock):
    with pytest.raises(
        ScheduleInvalid, match="catch-up policy 'sometimes' is not one of all, latest, skip"
    ):
        daily("sometimes")


def test_changing_a_field_that_cannot_be_edited_is_refused_naming_the_editable_ones(clock):
    daily()

    with pytest.raises(
        ScheduleInvalid,
        match=r"schedule fields \['paused'\] cannot be changed \(only workflow_name, "
        r"cron, timezone, id_template, args, kwargs, catch_up\)",
    ):
        schedule_update("report-daily", actor="test", paused=True)


def test_an_unregistered_workflow_is_refused():
    with pytest.raises(WorkflowNotFound):
        schedule_create(
            "nothing",
            "no_such_workflow",
            cron_expression="0 0 * * *",
            id_template="x:{date}",
            actor="test",
        )


def test_input_the_workflow_cannot_take_is_refused():
    from durable.errors import PayloadError

    with pytest.raises(PayloadError, match="does not fit workflow 'daily_report'"):
        schedule_create(
            "report-bad",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="r:{date}",
            args=["{date}", "extra"],
            actor="test",
        )


# --- two sweeps at once ---


@pytest.mark.skipif(
    "connection.vendor != 'postgresql'", reason="two connections racing need PostgreSQL"
)
@pytest.mark.django_db(transaction=True)
def test_two_sweeps_racing_fire_each_occurrence_once():
    start = datetime(2026, 5, 5, 12, 0, 30, tzinfo=UTC)
    with fake_clock(start):
        schedule_create(
            "report-minutely",
            "daily_report",
            cron_expression="* * * * *",
            id_template="report:{datetime}",
            args=["{datetime}"],
            actor="test",
        )
    rounds, errors, fired = 20, [], []

    def sweeper(barrier: threading.Barrier):
        try:
            for n in range(1, rounds + 1):
                with fake_clock(start + timedelta(minutes=n)):
                    barrier.wait()
                    fired.extend(fire_due())
        except Exception as error:  # reported below with the outcome
            errors.append(error)
            barrier.abort()
        finally:
            connection.close()

    barrier = threading.Barrier(2)
    threads = [threading.Thread(target=sweeper, args=(barrier,)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(report_ids()) == rounds
    assert sorted(fired) == report_ids()  # no occurrence was fired by both sweeps
    assert (
        ScheduleEvent.objects.filter(schedule__name="report-minutely", action="fire").count()
        == rounds
    )


@pytest.mark.parametrize("catch_up", ["all", "latest", "skip"])
def test_a_next_fire_time_that_is_no_occurrence_moves_to_the_next_one_without_firing(catch_up):
    with fake_clock(NOON) as clock:
        schedule = daily(catch_up)
        Schedule.objects.filter(pk=schedule.pk).update(
            next_fire_at=NOON + minutes(1)
        )  # set by hand
        clock.advance(minutes(2))

        fire_due()

    schedule.refresh_from_db()
    assert report_ids() == []
    assert schedule.next_fire_at == datetime(2026, 5, 6, tzinfo=UTC)


def test_a_schedule_moved_to_another_time_zone_fires_next_at_that_zone_s_next_occurrence():
    with fake_clock(NOON):
        daily()

        schedule = schedule_update("report-daily", timezone="America/Sao_Paulo", actor="ana")

    assert schedule.next_fire_at == datetime(2026, 5, 6, 3, 0, tzinfo=UTC)  # midnight in São Paulo
    assert Schedule.objects.get(name="report-daily").next_fire_at == schedule.next_fire_at


def test_a_schedule_that_cannot_fire_is_marked_changed_when_its_error_is_recorded():
    with fake_clock(NOON) as clock:
        daily()
        Schedule.objects.filter(name="report-daily").update(workflow_name="retired_report")
        clock.advance(hours(13))

        fire_due()

        schedule = Schedule.objects.get(name="report-daily")
        assert schedule.last_error.startswith("WorkflowNotFound")
        assert schedule.updated_at == clock.now()


def test_input_that_is_not_a_list_and_an_object_is_refused_saying_what_each_must_be():
    with pytest.raises(ScheduleInvalid) as refused:
        schedule_create(
            "report-daily",
            "daily_report",
            cron_expression="0 0 * * *",
            id_template="report:{date}",
            args={"day": "{date}"},
            actor="test",
        )

    assert (
        str(refused.value) == "a schedule's args must be a JSON list and its kwargs a JSON object"
    )


def test_pausing_a_schedule_reads_and_locks_its_row_once(clock):
    daily()

    with CaptureQueriesContext(connection) as queries:
        schedule_pause("report-daily", actor="ana")

    table = Schedule._meta.db_table
    assert (
        len(
            [
                q
                for q in queries
                if q["sql"].lstrip().startswith("SELECT") and f'FROM "{table}"' in q["sql"]
            ]
        )
        == 1
    )
    assert ScheduleEvent.objects.filter(schedule__name="report-daily").count() == 2  # create, pause
