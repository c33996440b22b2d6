"""Schemathesis fuzzes every operation of the served schema with all of its checks, as staff and
as a plain user, on made-up ids and on the caller's own objects."""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pytest
import schemathesis
from django.contrib.auth.models import Permission
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from rest_framework.test import APIClient
from schemathesis import GenerationMode, checks

from chat.tokens import token_create
from config.wsgi import application
from tests.factories import make_agent, make_user


def load_schema(modes: list[GenerationMode], examples: int) -> schemathesis.BaseSchema:
    """The served schema without the event streams (endless: tests/e2e/test_sse.py), generating
    cases deterministically (the same each run for the same code: Hypothesis also draws on the
    string constants of the project's modules). Without NUL characters: every string field
    refuses them (DRF's CharField), which the schema cannot say (tests cover those 400s)."""
    loaded = schemathesis.openapi.from_wsgi("/api/schema/", application)
    loaded.config.generation.update(
        max_examples=examples, deterministic=True, modes=modes, allow_x00=False
    )
    return loaded.exclude(path_regex=r"/events/$")


# FUZZ_EXAMPLES=200 for a deeper local hunt.
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "15"))
schema = load_schema(list(GenerationMode), EXAMPLES)
# Valid requests only, and no negative-data check: an invalid case whose invalid part is the path
# is made valid by putting the caller's own ids in it (invalid ids are fuzzed by the test above).
own_objects_schema = load_schema([GenerationMode.POSITIVE], max(5, EXAMPLES // 3)).include(
    path_regex=r"\{"
)
FUZZ = settings(
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None
)


# The apps whose model permissions the staff endpoints ask for.
STAFF_APPS = ("agents", "knowledge", "humans", "usage", "evals", "delegation")


@dataclass
class Caller:
    """Who calls the API, with ids of objects that exist and are theirs."""

    token: str
    ids: dict[str, str]

    @property
    def headers(self) -> dict[str, str]:
        """The bearer header."""
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(params=["staff", "user"])
def caller(request, db, settings) -> Caller:
    """A staff user holding every permission of the apps the API serves (staff-only operations
    run) or a plain user (they answer 403, and reads have their non-staff shapes), owning a
    session with a finished turn and a spare token."""
    settings.TASKS_RUN_SYNC = True
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    make_agent("finance", tags=["money"], description="Budgets.")
    user = make_user(f"fuzzer-{request.param}", is_staff=request.param == "staff")
    if request.param == "staff":  # staff operations ask the admin's model permissions
        user.user_permissions.set(Permission.objects.filter(content_type__app_label__in=STAFF_APPS))
    raw = token_create(user=user, name="fuzz")[1]
    spare, _ = token_create(user=user, name="spare")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    session_id = str(uuid.uuid4())
    sent = client.post(f"/api/v1/sessions/{session_id}/messages/", {"text": "2+2?"}, format="json")
    assert sent.status_code == 202, sent.json()
    ids = {
        "name": "finance",
        "session_id": session_id,
        "run_id": sent.json()["run_id"],
        "token_id": str(spare.pk),
    }
    return Caller(token=raw, ids=ids)


# Rules between a request and the data, or between two parameters, that a schema cannot state:
# writes naming other objects by name (a sub-agent, a fallback agent, a tool key, an access
# group, an agent of a suite or its gate: they must exist; a name must be free) and reports
# whose `from` and `to` must be in order and at most 366 days apart. A schema-valid request to
# these operations is accepted, or refused with a 400 `invalid` naming only the fields of those
# rules (the rules' own tests: tests/api, tests/knowledge, tests/evals, tests/usage).
AGENT_NAMES = {
    "allowed_subagents",
    "fallback_chain",
    "approval_tool_keys",
    "knowledge_bases",
    "tool_keys",
    "access_group",
    "access_permission",
    "human_group",
    "is_entry",
    "base_url",  # a remote agent (provider a2a) needs the URL of its card
    "secret_headers",  # header names (OpenAPI 3.0 states no pattern for an object's keys)
}
RULE_FIELDS = {
    ("POST", "/api/v1/agents/"): AGENT_NAMES | {"name"},
    ("PATCH", "/api/v1/agents/"): AGENT_NAMES,
    ("POST", "/api/v1/knowledge-bases/"): {"agents", "access_group", "access_permission", "name"},
    ("POST", "/api/v1/evals/"): {"agent", "gate_agents", "user_groups", "name"},
    ("PATCH", "/api/v1/evals/"): {"agent", "gate_agents", "user_groups", "name"},
    ("GET", "/api/v1/usage/"): {"from", "to"},
    # A schedule in words must say when (reminders.schedule_words), its agent must exist, and
    # its text must be more than spaces.
    ("POST", "/api/v1/schedules/"): {"agent", "schedule", "text"},
    ("PUT", "/api/v1/schedules/"): {"agent", "schedule", "text"},
    ("PATCH", "/api/v1/schedules/"): {"agent", "schedule", "text"},
}


def rule_fields(case: schemathesis.Case) -> set[str] | None:
    """The fields of the rules the schema cannot state for this operation, if it has any."""
    return next(
        (
            fields
            for (method, path), fields in RULE_FIELDS.items()
            if case.method == method and case.path.startswith(path)
        ),
        None,
    )


def excluded_checks(case: schemathesis.Case) -> list:
    """Every check, but positive_data_acceptance where `refused_only_by_its_rules` judges."""
    return [checks.positive_data_acceptance] if rule_fields(case) is not None else []


def refused_only_by_its_rules(ctx, response, case: schemathesis.Case) -> None:
    """A schema-valid request to an operation with rules the schema cannot state is accepted
    (or refused for its caller: 401, 403, 404), or a 400 `invalid` naming only those rules'
    fields."""
    fields = rule_fields(case)
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if fields is None or not positive or response.status_code != 400:
        return None
    error = response.json().get("error", {})
    named = set((error.get("details") or {}).keys())
    assert error.get("code") == "invalid" and named and named <= fields, (
        f"{case.method} {case.path}: a schema-valid request refused for {sorted(named) or error}"
        f", not only for the rules of {sorted(fields)}"
    )
    return None


@pytest.fixture(autouse=True)
def _connections_kept_between_requests(caller):
    """As Django's test client does: a request's start and end do not close the database
    connection (with DATABASE_CONN_MAX_AGE=0 every fuzzed request would open a new one).
    After `caller`, whose test client connects the signal again when its request ends."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(autouse=True)
def _no_throttling(monkeypatch):
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "allow_request", lambda self, request, view: True)


@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@FUZZ
def test_api_conforms_to_its_schema(case, caller):
    case.call_and_validate(
        headers=caller.headers,
        excluded_checks=excluded_checks(case),
        additional_checks=[refused_only_by_its_rules],
    )


@pytest.mark.django_db(transaction=True)
@own_objects_schema.parametrize()
@FUZZ
def test_api_conforms_to_its_schema_on_the_callers_own_objects(case, caller):
    # Made-up ids mostly meet 404s; here the path names objects that exist and are the
    # caller's, so the answers (and their shapes per role) are the real ones. That a request
    # without its token is refused is checked above, on every operation (its probes were a
    # third of this test's time).
    case.path_parameters = {**case.path_parameters, **caller.ids}
    case.call_and_validate(
        headers=caller.headers,
        excluded_checks=[
            *excluded_checks(case),
            checks.negative_data_rejection,
            checks.ignored_auth,
        ],
        additional_checks=[refused_only_by_its_rules],
    )


# Stateful: chains of calls along the links Schemathesis infers from the schema (a created
# agent, suite, case, session, token fed to the operations that take its id), as staff and as
# a plain user. STATEFUL_EXAMPLES=50 for a deeper local hunt.
STATEFUL = settings(
    max_examples=int(os.environ.get("STATEFUL_EXAMPLES", "6")),
    stateful_step_count=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.django_db(transaction=True)
def test_api_conforms_to_its_schema_along_chains_of_calls(caller):
    chained = load_schema([GenerationMode.POSITIVE], EXAMPLES)
    chained.config.update(headers=caller.headers)  # the caller's own credentials, every call

    class Calls(chained.as_state_machine()):  # type: ignore[misc]
        def validate_response(self, response, case, additional_checks=None, **kwargs) -> None:
            case.validate_response(
                response,
                excluded_checks=excluded_checks(case),
                additional_checks=[refused_only_by_its_rules],
                transport_kwargs=kwargs,
            )

    Calls.run(settings=STATEFUL)
