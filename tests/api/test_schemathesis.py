"""Schemathesis fuzzes every operation of the served schema with all of its checks."""

from __future__ import annotations

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import checks

from chat.tokens import token_create
from config.wsgi import application
from tests.factories import make_agent, make_user

schema = schemathesis.openapi.from_wsgi("/api/schema/", application)
schema = schema.exclude(path_regex=r"/events/$")  # endless event streams: tests/e2e/test_sse.py
# Deterministic in CI (same cases each run); FUZZ_EXAMPLES=200 for a deeper local hunt.
schema.config.generation.update(
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "15")), deterministic=True
)


@pytest.fixture
def token(db) -> str:
    """A staff user's token (so staff-only operations are exercised), and an entry agent."""
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    return token_create(user=make_user("fuzzer", is_staff=True), name="fuzz")[1]


@pytest.fixture(autouse=True)
def _no_throttling(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "allow_request", lambda self, request, view: True)


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None
)
def test_api_conforms_to_its_schema(case, token):
    # Every check but positive_data_acceptance: a schema cannot say that an access group or a
    # permission must exist, so schema-valid data may still be refused with a 400 that names
    # the field (tests/api/test_agents_runs.py covers those refusals).
    case.call_and_validate(
        headers={"Authorization": f"Bearer {token}"},
        excluded_checks=[checks.positive_data_acceptance],
    )
