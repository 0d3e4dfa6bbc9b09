"""The Prometheus alert rules shipped in deploy/prometheus/: valid, and each fires when it
should and not before (their own promtool unit tests)."""

from tests.config.promtool import needs_promtool, promtool
from tests.support import ROOT

RULES = ROOT / "deploy" / "prometheus"


@needs_promtool
def test_the_alert_rules_are_valid():
    done = promtool("check", "rules", "durable-alerts.yml", cwd=RULES)

    assert done.returncode == 0, done.stdout + done.stderr


@needs_promtool
def test_each_alert_fires_when_it_should_and_not_before():
    done = promtool("test", "rules", "durable-alerts.test.yml", cwd=RULES)

    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_health_failure_a_metric_can_see_has_an_alert():
    rules = (RULES / "durable-alerts.yml").read_text()

    for alert in (
        "DurableMetricsDown",
        "DurableSweepNotRunning",
        "DurableRunsOverdue",
        "DurableSweepLate",
        "WhatsAppTemplateNotApproved",
        "WhatsAppAccountRestricted",
    ):
        assert f"alert: {alert}" in rules
