"""The REST message list carries every field docs/protocol.md lists for a message, as the
snapshot does: citations, usage, origin, edited_from, superseded_by."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest

from chat.models import ChatMessage, ChatSession
from chat.selectors import message_as_event_data

pytestmark = pytest.mark.django_db

PROTOCOL = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def protocol_message_fields() -> set[str]:
    """The fields the paragraph "A message in `messages` … has:" names at its top level."""
    text = PROTOCOL.read_text()
    paragraph = text[text.index("A message in `messages`") :].split("\n\n", 1)[0]
    depth, top = 0, []
    for part in re.split(r"([({])|([)}])", paragraph):
        if part in ("(", "{"):
            depth += 1
        elif part in (")", "}"):
            depth -= 1
        elif part and depth == 0:
            top.append(part)
    return set(re.findall(r"`([a-z_]+)`", "".join(top))) - {"messages", "message"}


def test_the_list_has_every_field_the_protocol_names_with_the_saved_values(api, user):
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, title="t")
    first = ChatMessage.objects.create(
        id=uuid.uuid4(), session=session, role="user", content="Q3 budget?", origin="scheduled"
    )
    edited = ChatMessage.objects.create(
        id=uuid.uuid4(), session=session, role="user", content="Q4 budget?", edited_from=first
    )
    replaced_by = uuid.uuid4()
    answer = ChatMessage.objects.create(
        id=uuid.uuid4(),
        session=session,
        role="agent",
        content="It is 5M [1].",
        citations=[{"ref": 1, "document_id": 3, "title": "Budget", "version": 2}],
        usage={"prompt_tokens": 12, "completion_tokens": 5, "cost": "0.0000240000"},
        superseded_by=replaced_by,
    )
    listed = api.get(f"/api/v1/sessions/{session.id}/messages/").json()["results"]
    by_id = {m["id"]: m for m in listed}
    assert protocol_message_fields() <= set(by_id[str(answer.id)])
    assert by_id[str(answer.id)]["citations"][0]["title"] == "Budget"
    assert by_id[str(answer.id)]["usage"]["cost"] == "0.0000240000"
    assert by_id[str(answer.id)]["superseded_by"] == str(replaced_by)
    assert by_id[str(first.id)]["origin"] == "scheduled" and by_id[str(first.id)]["usage"] is None
    assert by_id[str(edited.id)]["edited_from"] == str(first.id)
    assert by_id[str(edited.id)]["origin"] == "" and by_id[str(edited.id)]["citations"] == []
    # What the snapshot shows and what REST shows are the same message.
    for message in (first, edited, answer):
        snapshot = message_as_event_data(message)
        rest = by_id[str(message.id)]
        assert {k: rest[k] for k in snapshot if k not in ("created_at", "updated_at")} == {
            k: v for k, v in snapshot.items() if k not in ("created_at", "updated_at")
        }


def test_the_schema_documents_the_new_fields(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    fields = schema["components"]["schemas"]["Message"]["properties"]
    assert {"citations", "usage", "origin", "edited_from", "superseded_by"} <= set(fields)
