"""A turn from LINE that asks its user (ask_user): the question arrives in the chat with its
choices as quick-reply buttons, the user's next message answers it, and the answer then comes
back once; a message while nothing is asked starts a turn as usual."""

from __future__ import annotations

import pytest

from chat.channels.models import ChannelLink, InboundEvent
from delegation.humans.models import InboxItem
from delegation.models import Run
from tests.channels.conftest import line_body, post_webhook, text_event
from tests.factories import make_user
from tests.fake_openai import Team, text, tool_call
from tests.humans.conftest import agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def team(fake_openai) -> Team:
    return Team(fake_openai)


def test_the_question_comes_with_buttons_and_the_next_message_answers_it(
    client, line, team, settings
):
    agent("boss", is_entry=True, tool_keys=["ask_user"])
    ChannelLink.objects.create(channel="line", external_id="U1111", user=make_user("alice"))
    team.script(
        "boss",
        tool_call("ask_user", {"question": "Tea or coffee?", "options": ["Tea", "Coffee"]}),
        text("Tea it is."),
    )
    post_webhook(client, line_body(text_event("something to drink")))
    [asked] = [*line.replies, *line.pushes]
    question = asked["messages"][-1]
    assert question["text"] == "Tea or coffee?"
    buttons = [item["action"] for item in question["quickReply"]["items"]]
    assert buttons == [
        {"type": "message", "label": "Tea", "text": "Tea"},
        {"type": "message", "label": "Coffee", "text": "Coffee"},
    ]
    assert InboxItem.objects.get().status == "pending"

    post_webhook(client, line_body(text_event("Tea")))  # the button's message
    assert InboxItem.objects.get().answer == "Tea"
    assert Run.objects.filter(parent=None).count() == 1  # answered, not a new turn
    assert line.texts()[-1] == "Tea it is."
    assert len(line.texts()) == 2
    assert set(InboundEvent.objects.values_list("status", flat=True)) == {"started", "answered"}
