"""Slack end to end against a local fake of its Web API: signatures and their age, the URL
check, a mention answered in its thread by replacing a working note, retries kept once, a
thread continuing its session, unknown accounts, 429s waited out by the SDK, and the experts'
progress in the working note (rate-limited, never after the answer)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from agents.models import Agent
from chat.channels.models import ChannelLink, Delivery, InboundEvent, LinkCode
from chat.channels.progress import progress_show
from chat.models import ChatMessage
from delegation.models import Run
from tests.channels.conftest import post_slack, slack_event
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def alice(db):
    make_agent("assistant", is_entry=True, tool_keys=["calculate"])
    user = make_user("alice")
    ChannelLink.objects.create(channel="slack", external_id="W111", user=user)
    return user


def test_a_wrong_or_stale_signature_is_refused_and_keeps_nothing(client, slack, alice):
    assert post_slack(client, slack_event("2+2?"), secret="wrong").status_code == 403
    assert post_slack(client, slack_event("2+2?"), age=600).status_code == 403
    unsigned = client.post("/channels/slack/events", data=b"{}", content_type="application/json")
    assert unsigned.status_code == 403
    assert not InboundEvent.objects.exists() and not slack.calls


def test_the_url_check_is_answered(client, slack):
    answer = post_slack(client, {"type": "url_verification", "challenge": "abc123"})
    assert answer.json() == {"challenge": "abc123"}


def test_slack_is_off_without_its_secrets(client, slack, settings):
    settings.SLACK_BOT_TOKEN = ""
    assert post_slack(client, slack_event("2+2?")).status_code == 404


def test_a_mention_is_answered_in_its_thread_by_replacing_the_working_note(client, slack, alice):
    event = slack_event("what is 2+2?")
    assert post_slack(client, event).status_code == 200
    [answer] = slack.messages.values()
    assert answer["thread_ts"] == event["event"]["ts"] and "4" in answer["text"]
    assert slack.calls == ["chat.postMessage", "chat.update"]
    assert Run.objects.get(parent=None).session.user == alice


def test_a_retried_event_starts_one_turn(client, slack, alice):
    event = slack_event("what is 2+2?", event_id="EvSAME")
    post_slack(client, event)
    assert post_slack(client, event, HTTP_X_SLACK_RETRY_NUM="1").status_code == 200
    assert Run.objects.filter(parent=None).count() == 1 and len(slack.messages) == 1


def test_a_thread_continues_its_session_and_a_new_mention_starts_another(client, slack, alice):
    first = slack_event("what is 2+2?")
    post_slack(client, first)
    post_slack(client, slack_event("and 3+3?", thread=first["event"]["ts"]))
    post_slack(client, slack_event("what is 5+5?"))
    sessions = list(ChatMessage.objects.filter(role="user").values_list("session_id", flat=True))
    assert sessions[0] == sessions[1] != sessions[2]


def test_a_direct_message_in_chinese(client, slack, alice):
    post_slack(client, slack_event("請問 2+2 是多少？", kind="message"))
    [answer] = slack.texts()
    assert "4" in answer


def test_an_unknown_account_gets_a_link_and_starts_nothing(client, slack, alice):
    post_slack(client, slack_event("hello", user="W999"))
    [note] = slack.texts()
    assert LinkCode.objects.get(external_id="W999").code in note
    assert not Run.objects.exists()


def test_the_bots_own_messages_are_ignored(client, slack, alice):
    event = slack_event("hello", kind="message")
    event["event"]["bot_id"] = "B1"
    assert post_slack(client, event).status_code == 200
    assert not InboundEvent.objects.exists()


def test_rate_limits_are_waited_out(client, slack, alice):
    slack.rate_limited = 2
    post_slack(client, slack_event("what is 2+2?"))
    assert len(slack.messages) == 1 and "4" in slack.texts()[0]


def test_a_signed_body_that_is_not_an_event_is_a_clear_400(client, slack, alice):
    answer = post_slack(client, ["not", "an", "object"])  # type: ignore[arg-type]
    assert answer.status_code == 400 and answer.json()["error"]["code"] == "invalid"
    event = slack_event("hello")
    del event["event_id"]
    assert post_slack(client, event).status_code == 400
    assert not InboundEvent.objects.exists()


@pytest.fixture
def team(alice):
    """alice's assistant may ask a task expert."""
    tasks = make_agent(
        "tasks", display_name="Task expert", tags=["task"], tool_keys=["create_task"]
    )
    Agent.objects.filter(name="assistant").get().allowed_subagents.set([tasks])
    return alice


def test_the_working_note_says_which_expert_is_asked_while_the_turn_waits(client, slack, alice):
    tasks = make_agent(
        "tasks",
        display_name="Task expert",
        tags=["task"],
        tool_keys=["create_task"],
        require_approval=True,
        human_group="Planners",
    )
    Agent.objects.filter(name="assistant").get().allowed_subagents.set([tasks])
    post_slack(client, slack_event("add a task: buy milk"))  # it waits for the Planners
    assert slack.updates == ["_Asking Task expert…_"]
    assert Delivery.objects.get().progress_at is not None


def test_a_progress_line_after_the_answer_is_not_shown(client, slack, team):
    post_slack(client, slack_event("add a task: buy milk"))
    [note] = slack.messages.values()
    answer, updates = note["text"], len(slack.updates)
    cache.clear()  # (past the rate limit)
    assert not progress_show(run_id=Run.objects.get(parent=None).id, line="Asking again…")
    assert len(slack.updates) == updates and note["text"] == answer


def test_progress_lines_are_rate_limited_per_turn(client, slack, alice):
    post_slack(client, slack_event("what is 2+2?"))
    Delivery.objects.update(status="pending", attempts=0)  # as if the answer were still due
    turn = Run.objects.get(parent=None).id
    cache.clear()
    assert progress_show(run_id=turn, line="Asking Finance…")
    assert not progress_show(run_id=turn, line="Asking HR…")  # within PROGRESS_SECONDS
    assert slack.updates[-1] == "_Asking Finance…_"


def test_the_working_note_shows_the_answer_as_it_grows_then_the_whole_of_it(
    client, slack, alice, settings
):
    settings.OFFLINE_MODEL_DELAY_MS = 40  # a long answer, streaming for seconds
    post_slack(client, slack_event("tell me a story about llamas"))
    [note] = slack.messages.values()
    growing = [text for text in slack.updates if text.endswith(" …")]
    assert growing, slack.updates
    assert all(note["text"].startswith(text.removesuffix(" …")) for text in growing)
    assert slack.updates[-1] == note["text"] and not note["text"].endswith(" …")
