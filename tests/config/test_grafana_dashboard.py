"""The Grafana dashboard in deploy/grafana/: every query parses, and every metric it or an
alert rule names is one /metrics really exports, so a renamed metric breaks this test
instead of a panel going blank."""

import json
import re
from datetime import timedelta

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from durable import services
from durable.runtime import sweep
from durable.testing import drive
from tests.config.promtool import needs_promtool, promtool
from tests.support import ROOT

DASHBOARD = ROOT / "deploy" / "grafana" / "durable.json"
ALERTS = ROOT / "deploy" / "prometheus" / "durable-alerts.yml"
TOKEN = "scrape-secret-for-tests"

# Grafana fills these in before Prometheus sees the query.
GRAFANA_VARIABLES = {"$__rate_interval": "5m", "$__interval": "1m", "$__range": "1h"}
# Series Prometheus makes itself for every scrape, not the app.
SCRAPE_SERIES = {"up", "scrape_duration_seconds", "scrape_samples_scraped"}
PROMQL_WORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "bool", "offset", "inf", "nan",
}  # fmt: skip
SUFFIXES = {
    "counter": ("_total",),
    "gauge": ("",),
    "summary": ("", "_count", "_sum"),
    "histogram": ("_bucket", "_count", "_sum"),
    "info": ("_info",),
    "stateset": ("",),
    "unknown": ("",),
}


def panels(container: dict):
    for panel in container.get("panels", []):
        yield panel
        yield from panels(panel)


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [
        target["expr"]
        for panel in panels(dashboard)
        for target in panel.get("targets", [])
        if target.get("expr")
    ]


def alert_queries() -> list[str]:
    rules = yaml.safe_load(ALERTS.read_text())
    return [rule["expr"] for group in rules["groups"] for rule in group["rules"]]


def as_prometheus_sees_it(expr: str) -> str:
    for variable, value in GRAFANA_VARIABLES.items():
        expr = expr.replace(variable, value)
    return expr


def metric_names(expr: str) -> set[str]:
    """The metric names in a PromQL expression: what is left once strings, label matchers,
    durations, grouping clauses, function calls and keywords are taken out."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", as_prometheus_sees_it(expr))
    expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    return {
        name
        for name in re.findall(r"(?<![\w.])([a-zA-Z_:][\w:]*)\b(?!\s*\()", expr)
        if name.lower() not in PROMQL_WORDS
    }


@pytest.fixture
def exported(client, settings, clock) -> set[str]:
    """The series names /metrics exports once runs have waited, been signalled, slept and
    been swept: each family's name with the suffixes of its type."""
    settings.DURABLE_METRICS_TOKEN = TOKEN
    waiting = drive(services.run_start("step_wait_step", id="w:1", actor="test").id)
    napping = drive(services.run_start("nap", id="nap:1", actor="test").id)
    services.signal_send(waiting.id, "go", {"value": 1}, actor="test")
    clock.advance(timedelta(hours=1, seconds=5))
    drive(waiting.id)
    drive(napping.id)
    sweep.sweep_due()
    sweep.sweep_due()  # the gap between two sweeps

    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 200
    return {
        family.name + suffix
        for family in text_string_to_metric_families(response.content.decode())
        for suffix in SUFFIXES[family.type]
    }


def test_the_dashboard_reads_one_prometheus_data_source_chosen_at_import():
    dashboard = json.loads(DASHBOARD.read_text())
    sources = {
        json.dumps(owner["datasource"])
        for panel in panels(dashboard)
        for owner in [panel, *panel.get("targets", [])]
        if "datasource" in owner
    }

    assert sources == {json.dumps({"type": "prometheus", "uid": "${DS_PROMETHEUS}"})}
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["DS_PROMETHEUS"]


@needs_promtool
def test_every_query_of_the_dashboard_parses(tmp_path):
    queries = dashboard_queries()
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:query_{n}", "expr": as_prometheus_sees_it(expr)}
                    for n, expr in enumerate(queries)
                ],
            }
        ]
    }
    (tmp_path / "dashboard.yml").write_text(yaml.safe_dump(rules))

    done = promtool("check", "rules", "dashboard.yml", cwd=tmp_path)

    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(queries)} rules found" in done.stdout


@pytest.mark.django_db
def test_every_metric_the_dashboard_and_the_alerts_name_is_exported(exported):
    named = {
        name: expr for expr in dashboard_queries() + alert_queries() for name in metric_names(expr)
    }

    unknown = {name: expr for name, expr in named.items() if name not in exported | SCRAPE_SERIES}

    assert len(named) > 20
    assert unknown == {}, f"not exported by /metrics: {unknown}"


def test_metric_names_are_read_past_labels_functions_and_grouping():
    expr = (
        'sum by (workflow) (increase(durable_lease_takeovers_total{job="x"}[$__rate_interval]))'
        " > 3 or time() - durable_sweep_last_timestamp_seconds > 30"
    )

    assert metric_names(expr) == {
        "durable_lease_takeovers_total",
        "durable_sweep_last_timestamp_seconds",
    }
