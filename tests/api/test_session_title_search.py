"""The sessions list's `search` folds 繁/简 and case, as the page's search does."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatSession

pytestmark = pytest.mark.django_db


def test_a_simplified_search_finds_a_traditional_title_and_only_the_users_own(
    api, user, other_user
):
    ChatSession.objects.create(id=uuid.uuid4(), user=user, title="請假規定")
    ChatSession.objects.create(id=uuid.uuid4(), user=user, title="Budget")
    ChatSession.objects.create(id=uuid.uuid4(), user=other_user, title="請假")

    found = api.get("/api/v1/sessions/", {"search": "请假"}).json()["results"]
    assert [s["title"] for s in found] == ["請假規定"]
    assert [
        s["title"] for s in api.get("/api/v1/sessions/", {"search": "budget"}).json()["results"]
    ] == ["Budget"]
