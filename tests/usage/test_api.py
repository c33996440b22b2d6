"""Usage reports over REST: grouped from the ledger, staff only for everyone's usage, a user's
own usage for everyone, bad queries refused, the costliest turns with their trees."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from tests.api.conftest import token_client
from tests.delegation.conftest import make_team
from tests.factories import grant, make_user
from tests.fake_openai import Team, delegate, text
from tests.usage.conftest import make_price, record

pytestmark = pytest.mark.django_db

TODAY = timezone.localdate()
YESTERDAY = TODAY - timedelta(days=1)
S1, S2 = uuid.uuid4(), uuid.uuid4()


@pytest.fixture
def ledger(user, other_user) -> None:
    """alice: 3 calls over two days and two agents; mallory: 1 call; one call 40 days ago."""
    record(user, "boss", YESTERDAY, "0.0010000000", S1)
    record(user, "finance", YESTERDAY, "0.0020000000", S1, cached=40)
    record(user, "boss", TODAY, "0.0000000001", S2, model="gpt-4.1")
    record(other_user, "boss", TODAY, "0.5000000000", uuid.uuid4())
    record(user, "boss", TODAY - timedelta(days=40), "9", S1)


def auditor() -> Any:
    """A staff user who may view usage records (as the admin's cost dashboard asks)."""
    return grant(make_user("auditor", is_staff=True), "usage.view_usagerecord")


@pytest.fixture
def staff():
    """An auditor, by API token."""
    return token_client(auditor())


@pytest.fixture
def api(user):
    """Alice, by API token."""
    return token_client(user)


@pytest.fixture
def mallory_api(other_user):
    """Another user, by API token."""
    return token_client(other_user)


def rows(response) -> list[tuple]:
    assert response.status_code == 200, response.json()
    return [
        (r["key"], r["model_calls"], r["prompt_tokens"], r["completion_tokens"], r["cost"])
        for r in response.json()["rows"]
    ]


def test_staff_see_everyones_usage_grouped(ledger, staff, user):
    by_agent = staff.get("/api/v1/usage/", {"group_by": "agent"})
    assert rows(by_agent) == [
        ("boss", 3, 300, 30, "0.5010000001"),
        ("finance", 1, 100, 10, "0.0020000000"),
    ]
    assert rows(staff.get("/api/v1/usage/", {"group_by": "day"})) == [
        (YESTERDAY.isoformat(), 2, 200, 20, "0.0030000000"),
        (TODAY.isoformat(), 2, 200, 20, "0.5000000001"),
    ]
    assert rows(staff.get("/api/v1/usage/", {"group_by": "user"})) == [
        ("mallory", 1, 100, 10, "0.5000000000"),
        ("alice", 3, 300, 30, "0.0030000001"),
    ]
    by_session = rows(staff.get("/api/v1/usage/", {"group_by": "session"}))
    assert (str(S1), 2, 200, 20, "0.0030000000") in by_session
    by_model = staff.get("/api/v1/usage/", {"group_by": "model"}).json()["rows"]
    assert [r["key"] for r in by_model] == ["openai/gpt-4o-mini", "openai/gpt-4.1"]
    body = by_agent.json()
    assert body["group_by"] == "agent"
    assert body["from"] == (TODAY - timedelta(days=29)).isoformat() and body["to"] == str(TODAY)
    total = body["totals"][0]
    assert total["cost"] == "0.5030000001" and total["model_calls"] == 4
    assert total["cached_tokens"] == 40 and total["currency"] == "USD"


def test_the_period_bounds_are_dates_both_included(ledger, staff):
    old = (TODAY - timedelta(days=40)).isoformat()
    only_old = staff.get("/api/v1/usage/", {"group_by": "day", "from": old, "to": old})
    assert rows(only_old) == [(old, 1, 100, 10, "9.0000000000")]
    just_today = staff.get("/api/v1/usage/", {"from": TODAY.isoformat(), "to": TODAY.isoformat()})
    assert [r[0] for r in rows(just_today)] == [TODAY.isoformat()]


def test_a_user_sees_only_their_own_usage(ledger, api, mallory_api):
    mine = api.get("/api/v1/usage/mine/", {"group_by": "agent"})
    assert rows(mine) == [
        ("finance", 1, 100, 10, "0.0020000000"),
        ("boss", 2, 200, 20, "0.0010000001"),
    ]
    assert mine.json()["totals"][0]["cost"] == "0.0030000001"
    theirs = mallory_api.get("/api/v1/usage/mine/", {"group_by": "session"})
    assert [r[4] for r in rows(theirs)] == ["0.5000000000"]
    assert str(S1) not in str(theirs.json())


def test_everyones_usage_is_for_staff_only(ledger, api, client):
    for path in ("/api/v1/usage/", "/api/v1/usage/turns/"):
        refused = api.get(path)
        assert refused.status_code == 403
        assert refused.json()["error"]["code"] == "permission_denied"
        assert client.get(path).status_code == 401
    assert client.get("/api/v1/usage/mine/").status_code == 401


@pytest.mark.parametrize(
    ("path", "query", "field"),
    [
        ("/api/v1/usage/", {"group_by": "planet"}, "group_by"),
        ("/api/v1/usage/mine/", {"group_by": "user"}, "group_by"),
        ("/api/v1/usage/", {"from": "yesterday"}, "from"),
        ("/api/v1/usage/", {"to": "2026-02-30"}, "to"),
        ("/api/v1/usage/", {"to": ""}, "to"),
        ("/api/v1/usage/", {"from": "2026-03-02", "to": "2026-03-01"}, "from"),
        ("/api/v1/usage/", {"from": "2024-01-01", "to": "2026-01-01"}, "from"),
        ("/api/v1/usage/turns/", {"limit": "0"}, "limit"),
        ("/api/v1/usage/turns/", {"limit": "101"}, "limit"),
    ],
)
def test_bad_queries_are_refused_naming_the_field(staff, api, path, query, field):
    client = api if "mine" in path else staff
    response = client.get(path, query)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and field in error["details"]


@pytest.mark.django_db(transaction=True)
def test_costly_turns_come_with_the_cost_of_every_run_in_their_tree(settings, user, fake_openai):
    settings.TASKS_RUN_SYNC = True
    make_price(input="1", output="1")
    make_team(boss=["finance"], finance=[])
    Team(fake_openai).script("boss", delegate("finance"), text("done"))
    sent = token_client(user).post(
        f"/api/v1/sessions/{uuid.uuid4()}/messages/", {"text": "hi"}, format="json"
    )
    assert sent.status_code == 202
    staff = token_client(auditor())
    turns = staff.get("/api/v1/usage/turns/").json()
    assert len(turns) == 1
    top = turns[0]
    assert top["root_id"] == sent.json()["run_id"] and top["user"] == "alice"
    assert top["model_calls"] == 3 and top["cost"] == "0.0000540000"  # 3 calls x 18 tokens
    assert [(n["agent"], n["depth"], n["model_calls"], n["cost"]) for n in top["tree"]] == [
        ("Boss", 0, 2, "0.0000360000"),
        ("Finance", 1, 1, "0.0000180000"),
    ]


def test_eval_turns_are_left_out_of_usage_reports(ledger, staff, settings):
    sandbox = make_user(f"{settings.EVALS_SANDBOX_PREFIX}case-1")
    record(sandbox, "boss", TODAY, "7.0000000000", uuid.uuid4())
    response = staff.get("/api/v1/usage/", {"group_by": "user"})
    keys = [key for key, *_ in rows(response)]
    assert keys and not any(key.startswith(settings.EVALS_SANDBOX_PREFIX) for key in keys)
