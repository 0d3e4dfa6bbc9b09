"""The benchmark's report: medians of trials, ratios taken trial by trial, and targets that
are called unstable rather than met when the trials disagree."""

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from benchmarks import report

SAVED_RUN = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "charts" / "2026-12-01-quick-peers.json"
)


def test_a_figure_is_the_median_of_its_trials_with_min_max_and_spread():
    figure = report.summary([10.0, 12.0, 11.0, 30.0, 9.0])

    assert (figure["median"], figure["min"], figure["max"]) == (11.0, 9.0, 30.0)
    assert figure["spread"] == pytest.approx(21 / 11)


def test_a_ratio_pairs_each_trial_with_the_one_taken_next_to_it():
    paired = report.ratio([100, 200, 150], [50, 100, 75])

    assert paired["trials"] == [2.0, 2.0, 2.0]
    assert paired["spread"] == 0


def test_a_target_behind_trials_that_spread_more_than_15_percent_is_unstable_not_met():
    steady = report.summary([100, 104, 98])
    noisy = report.summary([100, 130, 90])

    assert report.verdict(True, steady) == "met"
    assert report.verdict(False, steady) == "missed"
    assert report.verdict(True, noisy) == "unstable"


def test_a_saved_run_prints_a_table_with_every_target_and_a_chart_that_is_svg():
    saved = json.loads(SAVED_RUN.read_text())

    rows = report.targets(saved)
    table = report.table(saved)
    svg = ET.fromstring(report.chart_svg(saved))

    assert all(verdict.endswith("(smoke)") for _, _, verdict in rows)  # a --quick run
    assert any(target.startswith("3-step runs >= 2x DBOS direct") for target, _, _ in rows)
    assert "per step" in table
    assert svg.tag.endswith("svg")


def test_a_trial_made_of_parts_runs_at_all_its_runs_over_all_its_seconds():
    # Two parts of 100 runs: one in 1 s (100/s), one in 4 s (25/s): 200 runs in 5 s.
    assert report.rate_of_parts([100.0, 25.0]) == pytest.approx(40.0)
    assert report.rate_of_parts([80.0]) == 80.0


def test_noisy_trials_all_missing_the_line_miss_the_target_and_all_meeting_it_are_not_met():
    noisy = report.summary([0.65, 0.95, 0.75])

    assert report.verdict(False, noisy, per_trial=[False, False, False]) == "missed, every trial"
    assert report.verdict(True, noisy, per_trial=[True, True, True]) == "unstable, every trial met"
    assert report.verdict(True, noisy, per_trial=[True, False, True]) == "unstable"


def test_the_idle_scale_is_called_from_trials_that_alternate_with_the_empty_database():
    saved = json.loads(SAVED_RUN.read_text())
    saved["quick"] = False

    def idle(loaded_p50s, empty_p50s):
        return {
            "runs": 1_000_000,
            "sweep_tick": {"p50_ms": 1.6, "max_ms": 3.1, "trials_p50_ms": [1.5, 1.6, 1.7]},
            "resume_ms": {"p50": 4.5, "p95": 5.5, "p99": 6.5},
            "bytes_per_run": 474.0,
            "resume_p50_ms": report.summary(loaded_p50s),
            "empty_resume_p50_ms": report.summary(empty_p50s),
            "resume_vs_empty": report.ratio(loaded_p50s, empty_p50s),
        }

    saved["idle"] = idle([4.4, 4.5, 4.6], [4.0, 4.1, 4.2])
    close = {target: verdict for target, _, verdict in report.targets(saved)}
    table = report.table(saved)
    saved["idle"] = idle([5.5, 5.6, 5.7], [4.0, 4.1, 4.2])
    slow = {target: verdict for target, _, verdict in report.targets(saved)}

    assert close["signal to resume within 20% of empty (1,000,000 waiting)"] == "met"
    assert close["sweep tick <= 20 ms (1,000,000 waiting)"] == "met (3 trials)"
    assert slow["signal to resume within 20% of empty (1,000,000 waiting)"] == "missed"
    assert "110% of empty" in table


def test_an_idle_scale_run_alone_prints_its_figures_every_relation_size_and_its_two_targets():
    def trials(*p50s):
        return report.summary(list(p50s))

    run = {
        "idle_only": True,
        "quick": False,
        "trials": 3,
        "sweep_tick_empty": {"p50_ms": 0.9, "max_ms": 2.0},
        "worker_rss_mib": 480.0,
        "idle": {
            "runs": 10_000_000,
            "sweep_tick": {"p50_ms": 1.9, "max_ms": 4.0, "trials_p50_ms": [1.8, 1.9, 25.0]},
            "resume_ms": {"p50": 4.5, "p95": 5.5, "p99": 6.5},
            "bytes_per_run": 812.0,
            "create_seconds": 600.0,
            "sizes": {
                "durable_workflowrun": {
                    "heap": 3 * 2**30,
                    "toast": 0,
                    "indexes": {"btree (wake_at) WHERE (wake_at IS NOT NULL)": 300 * 2**20},
                }
            },
            "resume_p50_ms": trials(4.4, 4.5, 4.6),
            "empty_resume_p50_ms": trials(4.0, 4.1, 4.2),
            "resume_vs_empty": report.ratio([4.4, 4.5, 4.6], [4.0, 4.1, 4.2]),
        },
    }

    table = report.idle_table(run)

    assert "10,000,000 waiting" in table
    assert "durable_workflowrun: heap / TOAST and maps" in table
    assert "3,072 MiB / 0 MiB" in table
    assert re.search(r"btree \(wake_at\) WHERE \(wake_at IS NOT NULL\) +300 MiB", table)
    assert "made in (INSERT ... SELECT, vacuum)" in table
    # One trial's tick over 20 ms: the tick is not called met on the other two.
    assert "sweep tick <= 20 ms (10,000,000 waiting)" in table
    assert "unstable" in table.split("sweep tick <= 20 ms")[1].splitlines()[0]
    assert re.search(r"within 20% of empty \(10,000,000 waiting\) +110% +met", table)
