"""Agents saved over REST: the entry flag moves, stale tool keys are reported, not blocking."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection, transaction

from agents.models import Agent
from agents.services import agent_save
from tests.e2e.conftest import require_distributed
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


def entry_names() -> list[str]:
    return list(Agent.objects.filter(is_entry=True).values_list("name", flat=True))


def test_patch_is_entry_moves_the_flag_from_the_current_entry(staff_api, entry_agent):
    hr = make_agent("hr")
    response = staff_api.patch("/api/v1/agents/hr/", {"is_entry": True}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["is_entry"] is True and response.json()["version"] == hr.version + 1
    assert entry_names() == ["hr"]
    old = Agent.objects.get(pk=entry_agent.pk)
    assert old.version == entry_agent.version + 1, "losing the flag is a new version too"
    assert old.revisions.first().snapshot["is_entry"] is False


def test_create_as_entry_moves_the_flag(staff_api, entry_agent):
    body = {"name": "frontdesk", "display_name": "Front desk", "is_entry": True}
    response = staff_api.post("/api/v1/agents/", body, format="json")
    assert response.status_code == 201, response.json()
    assert entry_names() == ["frontdesk"]


def test_an_invalid_entry_switch_changes_nothing(staff_api, entry_agent):
    make_agent("hr")
    body = {"is_entry": True, "enabled": False}
    response = staff_api.patch("/api/v1/agents/hr/", body, format="json")
    assert response.status_code == 400
    assert "enabled" in response.json()["error"]["details"]
    assert entry_names() == ["assistant"]
    assert Agent.objects.get(name="hr").version == 1


def test_the_entry_agent_itself_can_be_saved_with_its_flag(staff_api, entry_agent):
    body = {"is_entry": True, "max_steps": 5}
    response = staff_api.patch("/api/v1/agents/assistant/", body, format="json")
    assert response.status_code == 200, response.json()
    assert entry_names() == ["assistant"]


@pytest.fixture
def stale(db) -> Agent:
    """An agent still listing `gone_tool`, a tool the code no longer registers."""
    agent = make_agent("stale", tool_keys=["calculate"])
    Agent.objects.filter(pk=agent.pk).update(tool_keys=["calculate", "gone_tool"])
    return Agent.objects.get(pk=agent.pk)


def test_stale_tool_keys_are_reported_and_do_not_block_unrelated_edits(staff_api, stale):
    shown = staff_api.get("/api/v1/agents/stale/").json()
    assert shown["stale_tool_keys"] == ["gone_tool"]
    response = staff_api.patch("/api/v1/agents/stale/", {"max_steps": 3}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["max_steps"] == 3
    assert response.json()["stale_tool_keys"] == ["gone_tool"]
    kept = staff_api.patch(
        "/api/v1/agents/stale/", {"tool_keys": ["gone_tool", "current_time"]}, format="json"
    )
    assert kept.status_code == 200, kept.json()
    assert kept.json()["tool_keys"] == ["gone_tool", "current_time"]


def test_a_new_unknown_tool_key_is_still_refused(staff_api, stale):
    body = {"tool_keys": ["calculate", "gone_tool", "rm_rf"]}
    response = staff_api.patch("/api/v1/agents/stale/", body, format="json")
    assert response.status_code == 400
    assert "rm_rf" in str(response.json()["error"]["details"]["tool_keys"])
    assert "gone_tool" not in str(response.json()["error"]["details"]["tool_keys"])
    assert Agent.objects.get(pk=stale.pk).tool_keys == ["calculate", "gone_tool"]


def test_a_stale_key_can_be_removed(staff_api, stale):
    response = staff_api.patch("/api/v1/agents/stale/", {"tool_keys": ["calculate"]}, format="json")
    assert response.status_code == 200
    assert response.json()["stale_tool_keys"] == []
    assert Agent.objects.get(pk=stale.pk).tool_keys == ["calculate"]


def test_a_stale_key_cannot_be_given_to_another_agent(staff_api, stale):
    body = {"name": "copycat", "display_name": "Copycat", "tool_keys": ["gone_tool"]}
    response = staff_api.post("/api/v1/agents/", body, format="json")
    assert response.status_code == 400 and "tool_keys" in response.json()["error"]["details"]


@pytest.mark.distributed
@pytest.mark.django_db(transaction=True)
def test_two_concurrent_entry_switches_end_with_one_entry_and_no_error(staff_api, entry_agent):
    require_distributed()
    hr = make_agent("hr")
    make_agent("legal")
    first_saved, release = threading.Event(), threading.Event()

    def switch_and_hold() -> None:
        try:
            with transaction.atomic():
                agent_save(agent=Agent.objects.get(pk=hr.pk), data={"is_entry": True})
                first_saved.set()
                release.wait(10)
        finally:
            connection.close()

    holder = threading.Thread(target=switch_and_hold)
    holder.start()
    assert first_saved.wait(10)
    answers: list = []
    second = threading.Thread(
        target=lambda: answers.append(
            staff_api.patch("/api/v1/agents/legal/", {"is_entry": True}, format="json")
        )
    )
    second.start()
    assert wait_for_a_lock_wait(), "the second switch waits for the first"
    release.set()
    holder.join(10)
    second.join(10)
    assert answers[0].status_code == 200, answers[0].content
    assert entry_names() == ["legal"]
    assert Agent.objects.get(pk=hr.pk).revisions.first().snapshot["is_entry"] is False


def wait_for_a_lock_wait(timeout: float = 10) -> bool:
    """True once another session of this database waits on a row lock."""
    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock'"
            )
            if cursor.fetchone()[0]:
                return True
            time.sleep(0.02)
    return False


@pytest.mark.parametrize(
    ("base_url", "saved"),
    [
        ("http://vllm:8000/v1", True),  # a compose service name: no top-level domain
        ("http://[::1]:8000/v1", True),
        ("https://api.example.com/v1", True),
        ("ftp://files.example.com", False),
        ("not a url at all", False),
    ],
)
def test_a_model_server_may_be_any_http_host(staff_api, entry_agent, base_url, saved):
    response = staff_api.patch("/api/v1/agents/assistant/", {"base_url": base_url}, format="json")
    assert (response.status_code == 200) is saved, response.json()
    if not saved:
        assert "base_url" in response.json()["error"]["details"]
