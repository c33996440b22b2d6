"""deploy/ stays true to the code: every metric its alerts and dashboard name is one the
platform exports, the probes ask the health paths, beat runs once, and kustomize lists only
files that exist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from django.test import Client

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
NAME = re.compile(r"\bagent_platform_[a-z_]+")


def exported_names(settings) -> set[str]:
    """Every metric family a scrape shows (the database readings included)."""
    settings.METRICS_TOKEN = "t"
    text = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer t").content.decode()
    return set(re.findall(r"^# TYPE (\S+) ", text, re.MULTILINE))


def family(name: str) -> str:
    """A sample name's family: a histogram's `_bucket`, `_count`, `_sum` and a counter's
    `_total` are one family in the exposition's TYPE line."""
    return re.sub(r"_(bucket|count|sum)$", "", name)


@pytest.mark.django_db
def test_the_alerts_and_the_dashboard_name_only_metrics_that_exist(settings):
    exported = exported_names(settings)
    exported |= {name + "_total" for name in exported}  # TYPE names a counter without _total
    used = set(NAME.findall((DEPLOY / "prometheus" / "alerts.yaml").read_text()))
    used |= set(NAME.findall((DEPLOY / "grafana" / "agent-platform-dashboard.json").read_text()))
    hpa = (DEPLOY / "kubernetes" / "hpa.yaml").read_text()
    adapter_names = set(re.findall(r'as: "(agent_platform_[a-z_]+)"', hpa))  # the adapter's own
    used |= set(NAME.findall(hpa)) - adapter_names
    assert used, "no metric named at all"
    assert {family(name) for name in used} - exported == set()


def test_the_alert_rules_and_the_dashboard_parse():
    rules = yaml.safe_load((DEPLOY / "prometheus" / "alerts.yaml").read_text())
    alerts = [rule for group in rules["groups"] for rule in group["rules"]]
    assert alerts and all({"alert", "expr", "annotations"} <= set(rule) for rule in alerts)
    dashboard = json.loads((DEPLOY / "grafana" / "agent-platform-dashboard.json").read_text())
    assert dashboard["panels"]


def manifests() -> dict[tuple[str, str], dict]:
    """Every object kustomize applies, by kind and name."""
    kustomization = yaml.safe_load((DEPLOY / "kubernetes" / "kustomization.yaml").read_text())
    objects = {}
    for resource in kustomization["resources"]:
        path = DEPLOY / "kubernetes" / resource
        assert path.exists(), resource
        for item in yaml.safe_load_all(path.read_text()):
            if item:
                objects[(item["kind"], item["metadata"]["name"])] = item
    return objects


def containers(item: dict) -> list[dict]:
    spec = item["spec"]["template"]["spec"] if "template" in item["spec"] else item["spec"]
    return spec["containers"]


def test_the_probes_ask_the_health_paths_and_beat_runs_once():
    objects = manifests()
    deployments = {name: item for (kind, name), item in objects.items() if kind == "Deployment"}
    assert set(deployments) >= {
        "agent-platform-web",
        "agent-platform-worker",
        "agent-platform-beat",
    }
    for name in ("agent-platform-web", "agent-platform-worker"):
        (container,) = containers(deployments[name])
        assert container["readinessProbe"]["httpGet"]["path"] == "/readyz", name
        assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", name
    beat = deployments["agent-platform-beat"]["spec"]
    assert beat["replicas"] == 1 and beat["strategy"]["type"] == "Recreate"
    (migrate,) = objects[("Job", "agent-platform-migrate")]["spec"]["template"]["spec"][
        "containers"
    ]
    assert "migrate" in [*migrate.get("command", []), *migrate.get("args", [])]
