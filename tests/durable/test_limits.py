"""Concurrency and rate limits: counted in the database, a step over its limit waits in line."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.urls import reverse

from durable import errors, minutes, seconds, services, testing, workflow
from durable.models import LimitTicket, RunStatus, TicketState, WorkflowRun
from durable.runtime import limits
from durable.runtime.store import live
from durable.runtime.sweep import sweep_due
from durable.testing import drive, override_workflow
from tests.durable.limited import LLM_QUEUE, ONE_AT_A_TIME, PER_KEY, RATE_TWO, mark, rate_two
from tests.effects.models import Effect

pytestmark = pytest.mark.django_db


def holding(workflow_name: str, n: int, *, key: str = "", declared=ONE_AT_A_TIME):
    """A run of ``workflow_name`` claimed by a worker, asking for ``declared`` at position 0:
    (its lease, None when it got the slot else when to come back)."""
    run = services.run_start(
        workflow_name,
        *([key] if workflow_name == "per_key" else []),
        n,
        id=f"{workflow_name}:{key}:{n}",
        actor="test",
    )
    _, lease = live.claim(run.id, owner=f"worker-{n}")
    return lease, lease.acquire_limit(declared, key, 0, "celery")


def test_a_limit_declared_again_with_other_numbers_is_refused():
    with pytest.raises(ValueError, match="already declared"):
        limits.limit("test-sends", rate=5, per=seconds(1))


def test_declaring_the_same_limit_twice_is_harmless():
    assert limits.limit("test-sends", rate=20, per=seconds(1)).rate == 20


def test_a_limit_needs_a_rate_or_a_concurrency():
    with pytest.raises(ValueError, match="needs a rate"):
        limits.limit("test-nothing")


@pytest.fixture
def declare():
    """``limits.limit`` for a test's own limits, each undeclared again when the test ends."""
    names = []

    def declare_(name: str, **numbers) -> limits.Limit:
        names.append(name)
        return limits.limit(name, **numbers)

    yield declare_
    for name in names:
        limits.undeclare(name)


def sends_under(limit_name: str, n: int) -> str:
    return workflow.step(mark, "send", limit=limit_name)


def second_of_two_sends(limit_name: str) -> WorkflowRun:
    """Two runs that send under ``limit_name``, driven one after the other: the second, as left."""
    with override_workflow(sends_under, name="sends_under"):
        runs = [
            services.run_start("sends_under", limit_name, n, id=f"{limit_name}:{n}", actor="test")
            for n in range(2)
        ]
        return [drive(run.id) for run in runs][1]


def test_a_limit_refuses_a_boolean_rate(declare):
    with pytest.raises(ValueError, match="rate must be a positive integer, not True"):
        declare("test-boolean-rate", rate=True)


def test_a_limit_refuses_a_rate_over_a_window_of_no_time(declare):
    with pytest.raises(ValueError, match="per must be a positive duration"):
        declare("test-no-window", rate=5, per=seconds(0))


def test_a_send_over_a_rate_per_minute_waits_until_the_minute_has_passed(clock, declare):
    declare("test-once-a-minute", rate=1, per=minutes(1))

    second = second_of_two_sends("test-once-a-minute")

    assert second.status == RunStatus.WAITING
    assert second.wake_at == clock.now() + timedelta(minutes=1)


def test_a_rate_declared_without_per_counts_per_second(clock, declare):
    declare("test-once-a-second", rate=1)

    second = second_of_two_sends("test-once-a-second")

    assert second.status == RunStatus.WAITING
    assert second.wake_at == clock.now() + timedelta(seconds=1)


def test_a_step_behind_a_token_still_held_is_told_to_come_back_a_period_from_now(clock, declare):
    declared = declare("test-once-in-ten-seconds", rate=1, per=seconds(10))
    holding("one_at_a_time", 1, declared=declared)  # its step is still running

    _, wake_at = holding("one_at_a_time", 2, declared=declared)

    assert wake_at == clock.now() + timedelta(seconds=10)


def test_a_concurrency_limit_is_declared_without_a_rate_window(declare):
    declared = declare("test-two-at-once", concurrency=2)

    assert declared == limits.Limit(name="test-two-at-once", rate=None, per=None, concurrency=2)


def test_the_declared_limits_are_listed_by_name(declare):
    declare("test-z-declared-first", concurrency=1)
    declare("test-a-declared-second", concurrency=1)

    names = [declared.name for declared in limits.declared()]

    assert names == sorted(names)
    assert {"test-a-declared-second", "test-z-declared-first", "test-one", "test-rate-two"} <= set(
        names
    )


def test_a_step_over_its_rate_waits_on_a_durable_timer_and_does_not_fail(clock):
    runs = [services.run_start(rate_two, n, id=f"rate:{n}", actor="test") for n in range(3)]

    states = [drive(run.id) for run in runs]

    assert [run.status for run in states] == [
        RunStatus.COMPLETED,
        RunStatus.COMPLETED,
        RunStatus.WAITING,
    ]
    assert states[2].waiting_for == "limit:test-rate-two"
    assert states[2].wake_at == clock.now() + timedelta(seconds=1)


def test_a_run_that_waited_for_its_rate_completes_once_the_window_has_room(clock):
    runs = [services.run_start(rate_two, n, id=f"rate:{n}", actor="test") for n in range(3)]
    for run in runs:
        drive(run.id)

    clock.advance(timedelta(seconds=1))

    assert drive(runs[2].id).status == RunStatus.COMPLETED
    assert Effect.objects.filter(name="send").count() == 3


def test_runs_waiting_for_a_rate_are_served_in_the_order_they_came(clock):
    runs = [services.run_start(rate_two, n, id=f"order:{n}", actor="test") for n in range(5)]
    for run in runs:
        drive(run.id)
    clock.advance(timedelta(seconds=1))

    last = drive(runs[4].id)  # its turn is after the two that waited before it

    assert last.status == RunStatus.WAITING
    assert [drive(run.id).status for run in runs[2:4]] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
    assert WorkflowRun.objects.get(pk=runs[4].id).wake_at == clock.now() + timedelta(
        seconds=1
    )  # called


def test_a_second_run_waits_while_the_only_slot_is_held(clock):
    holding("one_at_a_time", 1)

    _, wake_at = holding("one_at_a_time", 2)

    assert wake_at is not None


def test_freeing_the_slot_wakes_the_first_waiter_and_only_it(
    clock, django_capture_on_commit_callbacks
):
    holder, _ = holding("one_at_a_time", 1)
    second, _ = holding("one_at_a_time", 2)
    holding("one_at_a_time", 3)

    with django_capture_on_commit_callbacks(execute=True):
        holder.release_limit(ONE_AT_A_TIME, "", 0)

    assert testing.dispatched == [second.run_id]


def test_a_cancelled_waiter_does_not_hold_up_the_line(clock, django_capture_on_commit_callbacks):
    holder, _ = holding("one_at_a_time", 1)
    cancelled, _ = holding("one_at_a_time", 2)
    third, _ = holding("one_at_a_time", 3)
    services.run_cancel(cancelled.run_id, reason="customer withdrew", actor="ops")

    with django_capture_on_commit_callbacks(execute=True):
        holder.release_limit(ONE_AT_A_TIME, "", 0)

    assert testing.dispatched == [third.run_id]


def test_a_step_behind_the_only_held_slot_is_told_to_come_back_a_lease_from_now(clock, settings):
    holding("one_at_a_time", 1)

    _, wake_at = holding("one_at_a_time", 2)

    assert wake_at == clock.now() + timedelta(seconds=settings.DURABLE_LEASE_SECONDS)


def test_a_newcomer_does_not_take_a_freed_slot_from_a_waiter(clock):
    holder, _ = holding("one_at_a_time", 1)
    holding("one_at_a_time", 2)
    holder.release_limit(ONE_AT_A_TIME, "", 0)

    _, wake_at = holding("one_at_a_time", 3)

    assert wake_at is not None


def test_the_slot_of_a_worker_whose_lease_ran_out_is_free_again(clock, settings):
    holding("one_at_a_time", 1)  # its worker dies: nobody releases
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))

    _, wake_at = holding("one_at_a_time", 2)

    assert wake_at is None


def test_a_keyed_limit_serialises_one_key_and_lets_the_others_through(clock):
    holding("per_key", 1, key="acme", declared=PER_KEY)

    waits = [
        holding("per_key", 2, key="acme", declared=PER_KEY)[1],
        holding("per_key", 3, key="globex", declared=PER_KEY)[1],
    ]

    assert waits[0] is not None and waits[1] is None


def test_a_worker_that_lost_its_run_takes_no_slot(clock, settings):
    run = services.run_start("one_at_a_time", 1, id="stale:1", actor="test")
    _, stale = live.claim(run.id, owner="a")
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    live.claim(run.id, owner="b")

    with pytest.raises(errors.Fenced):
        stale.acquire_limit(ONE_AT_A_TIME, "", 0, "celery")
    assert not LimitTicket.objects.filter(state=TicketState.HELD).exists()


def test_a_step_naming_an_undeclared_limit_blocks_its_run_with_a_clear_message(clock):
    run = services.run_start("undeclared_limit", id="undeclared:1", actor="test")

    blocked = drive(run.id)

    assert blocked.status == RunStatus.BLOCKED
    assert blocked.error["type"] == "LimitNotFound"
    assert "durable.limit('nobody-declared-this'" in blocked.error["message"]


def test_a_completed_run_leaves_no_ticket_of_a_concurrency_limit_behind(clock):
    run = services.run_start("one_at_a_time", 1, id="done:1", actor="test")

    drive(run.id)

    assert WorkflowRun.objects.get(pk=run.id).status == RunStatus.COMPLETED
    assert not LimitTicket.objects.exists()


def test_a_sent_step_keeps_its_released_ticket_while_it_counts_in_the_rate_window(clock):
    run = services.run_start(rate_two, 1, id="done:2", actor="test")

    drive(run.id)

    assert list(LimitTicket.objects.values_list("state", "released_at")) == [
        (TicketState.RELEASED, clock.now())
    ]


def staff(client, *codenames: str):
    user = User.objects.create_user("ops", password="pw-unused-123", is_staff=True)
    user.user_permissions.add(
        *Permission.objects.filter(content_type__app_label="durable", codename__in=codenames)
    )
    client.force_login(user)
    return client


def test_an_operator_sees_who_holds_a_limit_and_who_waits_for_it(client, clock):
    holder, _ = holding("one_at_a_time", 1)
    waiter, _ = holding("one_at_a_time", 2)

    page = staff(client, "view_limitticket").get(reverse("admin:durable_limitticket_changelist"))

    assert page.status_code == 200
    text = page.content.decode()
    assert holder.run_id in text and waiter.run_id in text
    assert "held" in text and "waiting" in text


def test_staff_without_the_view_permission_do_not_see_the_tickets(client, clock):
    holding("one_at_a_time", 1)

    page = staff(client, "view_workflowrun").get(reverse("admin:durable_limitticket_changelist"))

    assert page.status_code == 403


def sends_on_the_llm_queue(n: int) -> str:
    return workflow.step(mark, f"sent-{n}", limit=RATE_TWO, queue=LLM_QUEUE)


def test_a_run_waiting_in_line_for_a_limit_is_woken_on_its_step_s_queue(clock):
    with override_workflow(sends_on_the_llm_queue, name="sends_on_the_llm_queue"):
        runs = [
            services.run_start("sends_on_the_llm_queue", n, id=f"rate:queue:{n}", actor="test")
            for n in range(3)
        ]

        for run in runs:
            drive(run.id)

    waiting = LimitTicket.objects.get(run_id=runs[2].id, state=TicketState.WAITING)
    assert waiting.queue == LLM_QUEUE  # not the default queue: its step asked for another


def waiting_in_line(prefix: str, count: int) -> list:
    """``count`` runs of rate_two (2 a second) driven once: two send, the rest wait in line."""
    runs = [services.run_start(rate_two, n, id=f"{prefix}:{n}", actor="test") for n in range(count)]
    return [drive(run.id) for run in runs]


def test_a_waiter_whose_run_is_still_queued_keeps_its_place_long_past_its_patience(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 5
    runs = waiting_in_line("queued", 4)  # two wait, parked on the limit
    clock.advance(timedelta(seconds=60))  # their messages wait behind a backlog all this while

    newcomer = drive(services.run_start(rate_two, 9, id="queued:newcomer", actor="test").id)

    assert newcomer.status == RunStatus.WAITING  # behind the two, not ahead of them
    assert [drive(run.id).status for run in runs[2:]] == [RunStatus.COMPLETED, RunStatus.COMPLETED]


def test_a_waiter_whose_run_came_back_and_moved_on_loses_its_place(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 5
    runs = waiting_in_line("moved", 4)  # two wait
    clock.advance(timedelta(seconds=1))
    live.claim(runs[3].id, owner="a worker stuck elsewhere in the run")
    clock.advance(timedelta(seconds=6))  # claimed, and not back at the limit within patience

    newcomer = drive(services.run_start(rate_two, 9, id="moved:newcomer", actor="test").id)

    assert newcomer.status == RunStatus.COMPLETED
    assert not LimitTicket.objects.filter(run_id=runs[3].id, state=TicketState.WAITING).exists()
    assert LimitTicket.objects.filter(run_id=runs[2].id, state=TicketState.WAITING).exists()


def test_a_waiter_claimed_just_now_keeps_its_place_while_it_replays_to_the_step(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 5
    runs = waiting_in_line("replaying", 4)  # two wait
    clock.advance(timedelta(seconds=60))
    for run in runs[2:]:
        live.claim(run.id, owner="a worker replaying the run")  # long after its wake-up

    newcomer = drive(services.run_start(rate_two, 9, id="replaying:newcomer", actor="test").id)

    assert newcomer.status == RunStatus.WAITING


def test_a_waiter_whose_run_now_waits_for_something_else_loses_its_place(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 5
    runs = waiting_in_line("elsewhere", 4)  # two wait
    WorkflowRun.objects.filter(pk=runs[3].id).update(
        waiting_for="signal:approval"
    )  # a deploy moved it on
    clock.advance(timedelta(seconds=6))

    newcomer = drive(services.run_start(rate_two, 9, id="elsewhere:newcomer", actor="test").id)

    assert newcomer.status == RunStatus.COMPLETED


def test_a_waiter_woken_for_a_freed_slot_goes_ahead_of_the_default_queue_s_backlog(
    clock, django_capture_on_commit_callbacks
):
    holder, _ = holding("one_at_a_time", 1)
    second, _ = holding("one_at_a_time", 2)

    with django_capture_on_commit_callbacks(execute=True):
        holder.release_limit(ONE_AT_A_TIME, "", 0)

    assert testing.dispatch_queues[second.run_id] == "durable-takeover"


def test_the_sweep_sends_a_waiter_whose_turn_came_on_the_lane(
    clock, django_capture_on_commit_callbacks
):
    runs = waiting_in_line("lane", 3)
    clock.advance(timedelta(seconds=1))

    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_due() == [runs[2].id]

    assert testing.dispatch_queues[runs[2].id] == "durable-takeover"


# --- a long line: only its head is told its turn; each grant calls the next waiter forward ---


def ticket_wake(run) -> object:
    return LimitTicket.objects.get(run_id=run.id, state=TicketState.WAITING).wake_at


def test_only_the_head_of_a_long_line_is_told_its_turn_the_rest_wait_to_be_called(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 60
    runs = waiting_in_line("long", 8)  # two send; of the six in line, two are the head (rate 2)

    head = [ticket_wake(run) for run in runs[2:4]]
    behind = [ticket_wake(run) for run in runs[4:]]

    assert head == [clock.now() + timedelta(seconds=1)] * 2
    assert min(behind) >= clock.now() + timedelta(seconds=60)  # a safety net, not a turn


def test_a_waiter_behind_the_head_looks_again_later_the_further_back_it_is(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 1
    runs = waiting_in_line("far", 12)

    behind = [ticket_wake(run) for run in runs[4:]]

    assert behind == sorted(behind) and behind[-1] > behind[0]


def test_waiters_behind_the_head_of_a_rate_s_line_look_again_a_share_of_its_period_apart(
    clock, settings
):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 1
    runs = waiting_in_line("spaced", 8)  # two send; the head (runs 2 and 3) is told: in 1 s

    behind = [ticket_wake(run) for run in runs[4:]]

    # each a turn later than the one before it: twice its share (1 s of 2 tokens) of a period
    assert behind == [clock.now() + timedelta(seconds=2 + n) for n in range(4)]


def test_a_grant_calls_the_next_waiter_forward_to_its_turn(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 60
    runs = waiting_in_line("called", 6)  # the head: runs 2 and 3; behind them: 4 and 5
    clock.advance(timedelta(seconds=1))

    assert drive(runs[2].id).status == RunStatus.COMPLETED  # its token: run 4 moves up to the head

    called = WorkflowRun.objects.get(pk=runs[4].id)
    assert ticket_wake(runs[4]) == clock.now() + timedelta(
        seconds=1
    )  # when run 2's token leaves the window
    assert called.wake_at == ticket_wake(runs[4])  # the sweep sends it then
    assert ticket_wake(runs[5]) >= clock.now() + timedelta(seconds=59)  # still behind


def test_a_waiter_whose_run_was_cancelled_leaves_the_line_and_the_next_is_called_forward(
    clock, settings
):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 60
    runs = waiting_in_line("left", 6)
    services.run_cancel(runs[2].id, reason="the customer withdrew", actor="test")

    drive(services.run_start(rate_two, 9, id="left:newcomer", actor="test").id)  # reads the line

    assert not LimitTicket.objects.filter(run_id=runs[2].id).exists()
    assert ticket_wake(runs[4]) == clock.now() + timedelta(seconds=1)


def test_a_newcomer_behind_more_than_twice_the_head_joins_the_back_and_leaves_the_head_alone(
    clock, settings
):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 60
    runs = waiting_in_line("tail", 7)  # two send; five wait, one more than twice the head (2)
    services.run_cancel(runs[2].id, reason="the customer withdrew", actor="test")

    newcomer = drive(services.run_start(rate_two, 9, id="tail:newcomer", actor="test").id)

    assert newcomer.status == RunStatus.WAITING
    assert LimitTicket.objects.filter(run_id=runs[2].id).exists()  # left for the head's next look
    assert ticket_wake(runs[4]) >= clock.now() + timedelta(seconds=59)  # nobody was called forward


def test_a_waiter_that_comes_back_to_the_head_is_told_its_turn_in_one_replay(clock, settings):
    settings.DURABLE_LIMIT_PATIENCE_SECONDS = 60
    replays = []

    def sends_and_counts_its_replays(n: int) -> str:
        replays.append(n)
        return workflow.step(mark, "send", limit=RATE_TWO)

    with override_workflow(sends_and_counts_its_replays, name="sends_and_counts"):
        runs = [
            services.run_start("sends_and_counts", n, id=f"back:{n}", actor="test")
            for n in range(6)
        ]
        for run in runs:
            drive(run.id)  # two send; 2 and 3 are the head; 4 and 5 wait behind them
        for run in runs[2:4]:
            services.run_cancel(run.id, reason="the customer withdrew", actor="test")
        replays.clear()

        back = drive(runs[4].id)  # before anyone called it forward: it is the head now

    assert back.status == RunStatus.WAITING
    assert ticket_wake(runs[4]) == clock.now() + timedelta(seconds=1)
    assert replays == [4]  # its own look at the line did not wake it to look again


def rows_read() -> int:
    """Rows of the ticket and run tables this transaction has read so far (PostgreSQL's count)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT SUM(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0)) "
            "FROM pg_stat_xact_user_tables WHERE relname IN (%s, %s)",
            [LimitTicket._meta.db_table, WorkflowRun._meta.db_table],
        )
        return cursor.fetchone()[0]


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="reads PostgreSQL's count of rows read"
)
def test_a_newcomer_reads_as_many_rows_behind_ten_waiters_as_behind_three_hundred(clock):
    def rows_read_by_a_newcomer(prefix: str, waiting: int) -> int:
        waiting_in_line(prefix, waiting + 2)
        newcomer = services.run_start(rate_two, 999, id=f"{prefix}:newcomer", actor="test")
        _, lease = live.claim(newcomer.id, owner="worker")
        with connection.cursor() as cursor:  # the plans PostgreSQL makes for a long line (at this
            cursor.execute(f"ANALYZE {LimitTicket._meta.db_table}")  # size it would read a whole
            cursor.execute(f"ANALYZE {WorkflowRun._meta.db_table}")  # table whatever it needs)
            cursor.execute("SET LOCAL enable_seqscan = off")
        before = rows_read()
        lease.acquire_limit(RATE_TWO, "", 0, "celery")
        read = rows_read() - before
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = on")
        LimitTicket.objects.all().delete()
        return read

    short, long = rows_read_by_a_newcomer("short", 10), rows_read_by_a_newcomer("long", 300)

    assert long <= short + 5  # the head and the tail of the line, not the whole of it


def test_a_waiter_whose_turn_comes_before_the_next_sweep_is_sent_by_its_own_advance(
    clock, settings, django_capture_on_commit_callbacks
):
    settings.DURABLE_SWEEP_LOOKAHEAD_SECONDS = 2  # the turn (in 1 s) comes before the next look
    runs = [services.run_start(rate_two, n, id=f"soon:{n}", actor="test") for n in range(3)]
    for run in runs[:2]:
        drive(run.id)

    with django_capture_on_commit_callbacks(execute=True):
        waiter = drive(runs[2].id)

    assert testing.dispatch_delays[waiter.id] == 1.0  # a countdown to its turn
    assert testing.dispatch_queues[waiter.id] == "durable-takeover"  # on the lane
    assert waiter.wake_at == clock.now() + timedelta(
        seconds=1 + settings.DURABLE_DISPATCH_GRACE_SECONDS
    )


def test_a_send_after_a_rate_s_token_was_given_back_waits_until_a_period_after_it_was_given_back(
    clock, declare
):
    declare("test-once-a-minute-later", rate=1, per=minutes(1))
    with override_workflow(sends_under, name="sends_under"):
        first = services.run_start(
            "sends_under", "test-once-a-minute-later", 0, id="later:0", actor="test"
        )
        second = services.run_start(
            "sends_under", "test-once-a-minute-later", 1, id="later:1", actor="test"
        )
        drive(first.id)
        sent_at = clock.now()
        clock.advance(timedelta(seconds=20))

        second = drive(second.id)

    assert second.status == RunStatus.WAITING
    assert second.wake_at == sent_at + timedelta(minutes=1)


def test_a_ticket_held_by_an_attempt_whose_worker_died_counts_as_returned_when_the_step_runs_again(
    clock, settings, declare
):
    declared = declare("test-twice-in-five-minutes", rate=2, per=minutes(5))
    lease, _ = holding("one_at_a_time", 1, declared=declared)  # its worker dies holding the token
    clock.advance(timedelta(seconds=settings.DURABLE_LEASE_SECONDS + 1))
    _, takeover = live.claim(lease.run_id, owner="worker-2")

    wake_at = takeover.acquire_limit(declared, "", 0, "celery")

    assert wake_at is None
    assert sorted(LimitTicket.objects.values_list("state", "released_at", "fencing_token")) == [
        (TicketState.HELD, None, takeover.token),
        (TicketState.RELEASED, clock.now(), lease.token),
    ]
