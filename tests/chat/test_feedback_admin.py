"""Feedback on answers is visible to staff in admin (list, search, the answer's page)."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from chat.feedback import feedback_set
from chat.models import ChatMessage, ChatSession
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_staff_see_ratings_and_notes_in_admin(user):
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="t")
    answer = ChatMessage.objects.create(
        id=uuid.uuid4(), session=session, role="agent", content="The answer is 41."
    )
    feedback_set(user=user, message=answer, rating=-1, note="It is 42.")
    admin = Client()
    admin.force_login(make_user("boss", is_staff=True, is_superuser=True))
    listing = admin.get("/admin/chat/messagefeedback/").content.decode()
    assert "It is 42." in listing and "The answer is 41." in listing and "thumbs down" in listing
    assert "It is 42." in admin.get("/admin/chat/messagefeedback/?q=42").content.decode()
    page = admin.get(f"/admin/chat/chatmessage/{answer.id}/change/").content.decode()
    assert "It is 42." in page  # the answer's own page lists its ratings
    assert admin.get("/admin/chat/messagefeedback/add/").status_code == 403


def test_a_note_is_checked(user):
    from config.errors import AppError

    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="t")
    answer = ChatMessage.objects.create(id=uuid.uuid4(), session=session, role="agent")
    for rating, note in ((0, ""), (1, "x" * 2001), (1, "a\x00b")):
        with pytest.raises(AppError):
            feedback_set(user=user, message=answer, rating=rating, note=note)
