"""A decimal string the API refuses below zero says so in its schema (no leading minus), so a
client (and schemathesis) can tell a valid amount from the schema alone."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_a_non_negative_amount_has_no_minus_in_its_pattern_and_a_report_cost_may(api):
    schemas = api.get("/api/schema/", {"format": "json"}).json()["components"]["schemas"]
    limit = re.compile(schemas["AgentRequest"]["properties"]["turn_max_cost"]["pattern"])
    assert limit.match("12.5") and not limit.match("-1")
    cost = re.compile(schemas["UsageRow"]["properties"]["cost"]["pattern"])
    assert cost.match("-0.25")  # no min_value: a refund-like amount stays expressible
