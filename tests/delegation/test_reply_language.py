"""A turn answers in the user's language: the message's own (繁體, 简体 or English), else the
page's; its experts inherit it, and tool messages, the offline model and failure notes use it."""

from __future__ import annotations

import re
import uuid
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client

from agents.demo import seed_demo_agents
from chat.consumers import page_language
from chat.models import ChatMessage
from chat.services import preference_set_timezone
from config.text import reply_language
from delegation.humans.decisions import item_decide
from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from delegation.runs.ending import failure_message_id, run_end_elsewhere, run_failure
from delegation.turns import turn_start
from tests.clock import before_saturday_noon

HAN = re.compile(r"[\u4e00-\u9fff]")


def city_answered(root: Run, city: str) -> Run:
    """The turn after its user answered the weather expert's "Which city?" (as the page's
    buttons or answer box would); tasks run synchronously, so it has ended or waits again."""
    for asked in InboxItem.objects.filter(run__root=root, tool="get_weather", status="pending"):
        item_decide(item=asked, user=root.user, decision="approve", answer=city)
    return Run.objects.get(pk=root.pk)


@pytest.mark.parametrize(
    ("text", "page", "expected"),
    [
        ("周末早上去机场接人", "", "zh-hans"),  # 机 and 场 exist only in Simplified
        ("財務部最新的檔案是什麼", "en", "zh-hant"),  # the words beat an English page
        ("明天下午有空吗", "zh-hant", "zh-hans"),
        ("你好", "zh-hant", "zh-hant"),  # the same in both scripts: the page's Chinese
        ("你好", "en", "zh-hans"),
        ("Remind me to call 妈妈", "zh-hans", "en"),  # mostly English
        ("12*(3+4)", "zh-hant", "zh-hant"),  # no words: the page's
        ("12*(3+4)", "", "en-us"),  # nothing at all: the site's
        ("12*(3+4)", "fr", "en-us"),  # a language we do not offer counts as none
        ("12*(3+4)", "zh-TW", "zh-hant"),  # a browser's variant is read as ours
    ],
)
def test_the_reply_language_is_the_messages_else_the_pages(text, page, expected):
    assert reply_language(text, page) == expected


@pytest.mark.django_db(transaction=True)
def test_a_chinese_errand_is_answered_in_chinese_by_every_expert(user, settings):
    settings.TASKS_RUN_SYNC = True
    seed_demo_agents()
    preference_set_timezone(user=user, timezone_name=before_saturday_noon())
    sent = turn_start(
        user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="周末早上去机场接人"
    )
    root = city_answered(Run.objects.get(pk=sent.run.id), "上海")
    tree = Run.objects.filter(root=root)
    assert root.language == "zh-hans" and tree.count() == 3
    assert set(tree.values_list("language", flat=True)) == {"zh-hans"}
    assert root.status == RunStatus.SUCCEEDED
    assert root.answer.startswith("[离线模型]")
    for english in ("Created", "Reminder set", " says:", "Saturday", "offline model"):
        assert english not in root.answer, (english, root.answer)
    for run in tree:  # each expert's own answer too
        assert HAN.search(run.answer) and "Created" not in run.answer, run.answer


@pytest.mark.django_db(transaction=True)
def test_the_time_in_traditional_chinese(user, entry_agent, settings):
    settings.TASKS_RUN_SYNC = True
    sent = turn_start(
        user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="現在幾點？"
    )
    root = Run.objects.get(pk=sent.run.id)
    assert root.language == "zh-hant"
    assert root.answer.startswith("[離線模型] 現在是 ") and "星期" in root.answer, root.answer


@pytest.mark.django_db(transaction=True)
def test_a_message_without_words_follows_the_page_language(user, entry_agent, settings):
    settings.TASKS_RUN_SYNC = True
    client = Client(HTTP_ACCEPT_LANGUAGE="zh-TW,zh;q=0.9")
    client.force_login(user)
    sid = uuid.uuid4()
    sent = client.post(
        f"/api/v1/sessions/{sid}/messages/", {"text": "12*(3+4)"}, content_type="application/json"
    )
    assert sent.status_code == 202, sent.content
    run = Run.objects.get(pk=sent.json()["run_id"])
    assert run.language == "zh-hant"
    assert run.answer.startswith("[離線模型]") and "= 84" in run.answer


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("language", "expected"),
    [
        ("zh-hans", "抱歉，我没能完成：模型回答太慢了。"),
        ("zh-hant", "抱歉，我沒能完成：模型回答太慢了。"),
        ("", "Sorry, I could not finish this: the model took too long to answer."),
    ],
)
def test_a_failure_note_is_in_the_runs_language(user, entry_agent, language, expected):
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="x")
    run = Run.objects.get(pk=sent.run.id)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, language=language)
    run.refresh_from_db()
    # Ended outside any run (a stop, the sweeper): the note is still in the run's language.
    assert run_end_elsewhere(
        run=run, status=RunStatus.FAILED, error=run_failure("model_timeout", "t/o")
    )
    assert ChatMessage.objects.get(pk=failure_message_id(run)).content == expected
    run.refresh_from_db()
    assert run.error["message"].lower() in expected.lower()  # what the page's notice shows


def _scope(cookie: str = "", accept: str = "") -> dict:
    headers = [(b"accept-language", accept.encode())] if accept else []
    return {"cookies": {"django_language": cookie} if cookie else {}, "headers": headers}


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        (_scope(accept="zh-CN,zh;q=0.9"), "zh-hans"),
        (_scope(cookie="zh-hant", accept="zh-CN"), "zh-hant"),  # the user's choice wins
        (_scope(accept="fr-FR"), "en"),
        (_scope(), "en"),
    ],
)
def test_a_socket_reads_the_page_language_as_the_page_does(scope, expected):
    assert page_language(scope) == expected


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("text", "experts", "label", "said"),
    [
        # The reminder comes at 20:00 the day before: on a Friday evening that time has passed,
        # and the reminder expert says so (in the same language) instead of setting it.
        (
            "周末早上去机场接人",
            {"tasks", "weather", "reminders"},
            "[离线模型]",
            ("已设置提醒", "未设置提醒"),
        ),
        (
            "Pick up Anna at the airport on Saturday morning",
            {"tasks", "weather", "reminders"},
            "[offline model]",
            ("Reminder set for", "No reminder set"),
        ),
        ("明天下午有空吗", {"calendar"}, "[离线模型]", "13:00 到 18:00"),  # the afternoon only
        ("Am I free tomorrow afternoon?", {"calendar"}, "[offline model]", "between 13:00 and"),
        ("完成写周报", {"tasks"}, "[离线模型]", "写周报"),
        ("Finish writing the weekly report", {"tasks"}, "[offline model]", "weekly report"),
        ("財務部最新的檔案是什麼", {"finance"}, "[離線模型]", "最新的文件是「"),
        ("What is the newest finance document?", {"finance"}, "[offline model]", "newest document"),
        ("给我讲个笑话", set(), "[离线模型]", "离线模型，只会按简单的规则"),
        ("Tell me a joke", set(), "[offline model]", "only follow simple rules"),
    ],
)
def test_the_readmes_examples_work_offline_in_both_languages(settings, text, experts, label, said):
    """The README's promise: with no model key, each example reaches its experts and is
    answered in its own language (a joke: the offline model says honestly what it can do)."""
    settings.TASKS_RUN_SYNC = True
    settings.DEFAULT_MODEL_PROVIDER = "offline"
    settings.DEBUG = True  # --users refuses otherwise
    call_command("seed_demo", "--users", stdout=StringIO())
    demo = get_user_model().objects.get(username="demo")
    preference_set_timezone(user=demo, timezone_name=before_saturday_noon())
    sent = turn_start(user=demo, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text)
    root = city_answered(Run.objects.get(pk=sent.run.id), "Shanghai")  # the errands ask it
    assert root.status == RunStatus.SUCCEEDED
    assert set(root.children.values_list("agent__name", flat=True)) == experts
    said = (said,) if isinstance(said, str) else said
    assert root.answer.startswith(label) and any(s in root.answer for s in said), root.answer
