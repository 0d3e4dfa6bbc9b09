"""The heartbeat thread (durable/runtime/heartbeat.py): how long it stays when it has no lease to
keep."""

from durable.runtime import heartbeat


class SteppedTime:
    """The heartbeat module's view of time: ``sleep`` moves ``monotonic`` on at once."""

    def __init__(self):
        self.now = 1000.0
        self.slept = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        self.slept += seconds


def test_a_heartbeat_with_no_lease_to_keep_stays_its_idle_minute_for_the_next_step_then_ends(
    monkeypatch,
):
    stepped = SteppedTime()
    monkeypatch.setattr(heartbeat, "time", stepped)
    beat = heartbeat.Heartbeat()

    beat._loop()  # returns once it has been idle for IDLE_EXIT_SECONDS

    assert (
        heartbeat.Heartbeat.IDLE_EXIT_SECONDS
        <= stepped.slept
        < heartbeat.Heartbeat.IDLE_EXIT_SECONDS + 1
    )
    assert beat._thread is None
