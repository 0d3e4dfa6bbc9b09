"""The history recorder's scenarios (tests/histories/record.py) still play to their end, and
what they record replays, so re-recording a history is always one command away."""

import pytest

from durable.features import history
from tests.histories.record import SCENARIOS, play

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[scenario.name for scenario in SCENARIOS])
def test_each_recorder_scenario_ends_where_it_says_and_its_history_replays(
    scenario, settings, tmp_path
):
    settings.MEDIA_ROOT = tmp_path

    run_id = play(scenario)  # raises when the run ends elsewhere

    report = history.history_replay(history.history_parse(history.history_export(run_id)))
    assert report.ok, f"{report.summary}\n{report.diff}"


def test_every_scenario_has_its_recorded_history_checked_in():
    from tests.histories.record import HERE

    assert [
        scenario.name for scenario in SCENARIOS if not (HERE / f"{scenario.name}.json").exists()
    ] == []
