"""NUL characters (which Postgres cannot store) are refused with a clear 400 at every REST door."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatMessage, ChatSession

pytestmark = pytest.mark.django_db


def assert_refused(response, field: str) -> None:
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "Null characters are not allowed" in str(error["details"][field])


def test_a_message_with_a_nul_is_refused(api, entry_agent):
    url = f"/api/v1/sessions/{uuid.uuid4()}/messages/"
    assert_refused(api.post(url, {"text": "hi\x00there"}, format="json"), "text")
    assert not ChatMessage.objects.exists() and not ChatSession.objects.exists()


def test_a_session_title_with_a_nul_is_refused_on_create_and_rename(api, user):
    assert_refused(api.post("/api/v1/sessions/", {"title": "a\x00b"}, format="json"), "title")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="kept")
    url = f"/api/v1/sessions/{session.id}/"
    assert_refused(api.patch(url, {"title": "a\x00b"}, format="json"), "title")
    assert ChatSession.objects.get(pk=session.pk).title == "kept"


def test_a_search_with_a_nul_is_refused(api, user):
    ChatSession.objects.create(id=uuid.uuid4(), user=user, title="budget")
    assert_refused(api.get("/api/v1/sessions/?search=bud%00get"), "search")


def test_a_token_name_and_an_agent_field_with_a_nul_are_refused(api, staff_api, entry_agent):
    assert_refused(api.post("/api/v1/tokens/", {"name": "a\x00"}, format="json"), "name")
    body = {"system_prompt": "be\x00nice"}
    assert_refused(
        staff_api.patch("/api/v1/agents/assistant/", body, format="json"), "system_prompt"
    )


def test_an_assignment_group_with_a_nul_is_refused_before_the_database_is_asked(
    staff_api, entry_agent
):
    """Looking the group up with the NUL was a 500 on Postgres (which refuses NULs in text)."""
    body = {"human_group": "finance\x00"}
    assert_refused(staff_api.patch("/api/v1/agents/assistant/", body, format="json"), "human_group")
