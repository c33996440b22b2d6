"""LINE end to end against a local fake of its API: signatures, unknown accounts and linking,
a linked user's turn answered in their chat (English and Chinese), repeats kept once, notes for
what is not text, a user's messages reaching only their own sessions, and the loading animation
again as an expert is asked."""

from __future__ import annotations

import pytest

from agents.models import Agent
from chat.channels.models import ChannelLink, Delivery, InboundEvent, LinkCode
from chat.models import ChatMessage, ChatSession
from delegation.models import Run
from tests.channels.conftest import line_body, post_webhook, sticker_event, text_event
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice(db):
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    return make_user("alice")


def linked(user, external_id: str = "U1111") -> ChannelLink:
    return ChannelLink.objects.create(channel="line", external_id=external_id, user=user)


def test_a_missing_or_wrong_signature_is_refused_and_keeps_nothing(client, line, alice):
    body = line_body(text_event("hello"))
    assert post_webhook(client, body, sign="").status_code == 400
    wrong = post_webhook(client, body, sign="bm90IHRoZSBzaWduYXR1cmU=")
    assert wrong.status_code == 403 and "signature" in wrong.json()["error"]["message"]
    assert not InboundEvent.objects.exists() and not line.replies and not line.pushes


def test_line_is_off_without_its_secrets(client, line, settings):
    settings.LINE_CHANNEL_SECRET = ""
    assert post_webhook(client, line_body(text_event("hi"))).status_code == 404


def test_a_malformed_body_is_a_clear_400(client, line):
    body = b'{"events": "not a list"'
    answer = post_webhook(client, body)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid"


def test_an_unknown_account_gets_a_link_and_starts_no_turn(client, line, alice):
    assert post_webhook(client, line_body(text_event("請問我的年假還有幾天？"))).status_code == 200
    [note] = line.texts()
    code = LinkCode.objects.get()
    assert f"https://agents.example.com/channels/link/{code.code}/" in note
    assert "尚未" in note or "連結" in note, note  # in the writer's script
    assert not Run.objects.exists() and not ChatMessage.objects.exists()


def test_confirming_the_link_on_the_page_links_the_account_once(client, line, alice):
    post_webhook(client, line_body(text_event("hello")))
    code = LinkCode.objects.get()
    page = f"/channels/link/{code.code}/"
    assert client.get(page).status_code == 302  # sign in first
    client.force_login(alice)
    assert "Link this LINE account" in client.get(page).content.decode()
    assert client.post(page).status_code == 302
    link = ChannelLink.objects.get()
    assert (link.user, link.external_id, link.linked_by) == (alice, "U1111", alice)
    assert client.post(page).status_code == 404  # used up
    assert client.get("/channels/links/").content.decode().count("U1111") == 1


def test_an_account_linked_to_someone_cannot_be_taken_by_another(client, line, alice):
    linked(alice)
    code = LinkCode.objects.create(
        code="c" * 20, channel="line", external_id="U1111", expires_at="2999-01-01T00:00:00Z"
    )
    client.force_login(make_user("mallory"))
    assert client.post(f"/channels/link/{code.code}/").status_code == 409
    assert ChannelLink.objects.get().user == alice


def test_a_linked_users_message_is_answered_in_their_chat(client, line, alice):
    linked(alice)
    assert post_webhook(client, line_body(text_event("what is 2+2?"))).status_code == 200
    run = Run.objects.get(parent=None)
    assert run.status == "succeeded" and run.session.user == alice
    [reply] = line.replies
    assert "4" in reply["messages"][0]["text"] and not line.pushes
    assert line.loading == [{"chatId": "U1111", "loadingSeconds": 60}]
    assert Delivery.objects.get().status == "sent"
    # The turn is the user's, in their session: the page shows it like any other.
    assert ChatMessage.objects.filter(session__user=alice, role="user").count() == 1


def test_chinese_in_chinese(client, line, alice):
    linked(alice)
    post_webhook(client, line_body(text_event("請問 2+2 是多少？")))
    [text] = line.texts()
    assert "4" in text
    assert Run.objects.get(parent=None).language == "zh-hant"


def test_a_redelivered_or_repeated_event_starts_one_turn_and_answers_once(client, line, alice):
    linked(alice)
    event = text_event("what is 2+2?", event_id="01REPEATED")
    post_webhook(client, line_body(event))
    again = {**event, "deliveryContext": {"isRedelivery": True}}
    assert post_webhook(client, line_body(again, event)).status_code == 200
    assert Run.objects.filter(parent=None).count() == 1
    assert len(line.texts()) == 1


def test_a_sticker_gets_a_polite_note_and_no_turn(client, line, alice):
    linked(alice)
    post_webhook(client, line_body(sticker_event()))
    [note] = line.texts()
    assert "text" in note and not Run.objects.exists()


def test_a_linked_account_reaches_only_its_users_sessions(client, line, alice):
    bob = make_user("bob")
    ChatSession.objects.create(id=linked(alice).session_id, user=bob)  # made to collide
    post_webhook(client, line_body(text_event("what is 2+2?")))
    assert not ChatMessage.objects.filter(session__user=bob).exists()
    assert not Run.objects.exists()
    [note] = line.texts()
    assert note  # told plainly, nothing of bob's shown
    assert "2+2" not in note


def test_a_removed_link_starts_nothing(client, line, alice):
    link = linked(alice)
    client.force_login(alice)
    other = linked(make_user("bob"), "U2222")
    assert client.post(f"/channels/links/{other.pk}/remove/").status_code == 404  # not hers
    assert client.post(f"/channels/links/{link.pk}/remove/").status_code == 302
    post_webhook(client, line_body(text_event("what is 2+2?")))
    assert not Run.objects.exists() and LinkCode.objects.count() == 1


def test_the_chat_page_links_to_the_accounts_only_when_a_channel_is_on(
    client, line, alice, settings
):
    client.force_login(alice)
    assert 'href="/channels/links/"' in client.get("/").content.decode()
    settings.LINE_CHANNEL_SECRET = ""
    assert 'href="/channels/links/"' not in client.get("/").content.decode()


def test_an_oversized_request_is_refused_and_keeps_nothing(client, line):
    body = line_body(text_event("x" * 1_100_000))
    answer = post_webhook(client, body)
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "invalid"
    assert not InboundEvent.objects.exists()


def test_the_loading_animation_starts_again_as_an_expert_is_asked(client, line, alice):
    linked(alice)
    tasks = make_agent(
        "tasks",
        display_name="Task expert",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    Agent.objects.filter(name="assistant").get().allowed_subagents.set([tasks])
    post_webhook(client, line_body(text_event("add a task: buy milk")))  # waits for a person
    assert line.loading == [{"chatId": "U1111", "loadingSeconds": 60}] * 2
    assert Delivery.objects.get().progress_at is not None
