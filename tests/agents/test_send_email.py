"""send_email: to the user or allowed addresses only, bounded, from MAIL_FROM, with a Message-ID
made from the run and the call; every call waits for a staff approval and sends once."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from agents.registry import ToolContext, ToolResult, execute, get_tool
from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from tests.factories import make_agent, make_user
from tests.fake_openai import Team, text, tool_call
from tests.humans.helpers import client, decide, start, tool_results

RUN_ID = uuid.UUID("00000000-0000-4000-8000-000000000033")


@pytest.fixture
def sender(settings) -> str:
    settings.MAIL_FROM = "Assistant <assistant@platform.example>"
    settings.MAIL_ALLOWED_RECIPIENTS = ["@example.org", "boss@partner.example"]
    return settings.MAIL_FROM


@pytest.fixture
def alice(db) -> Any:
    return make_user("alice", email="alice@company.example")


def send(user: Any, arguments: dict, call_id: str = "call_1", run_id: uuid.UUID = RUN_ID):
    context = ToolContext(user=user, run=Run(id=run_id), call_id=call_id)
    result: ToolResult = execute(get_tool("send_email"), context, json.dumps(arguments))
    json.loads(result.as_content())
    return result


def test_with_no_address_the_mail_goes_to_the_user(alice, sender, mailoutbox):
    result = send(alice, {"subject": "Your summary", "body": "Three invoices are open."})

    assert result.ok, result.error
    (mail,) = mailoutbox
    assert mail.to == ["alice@company.example"]
    assert mail.from_email == sender
    assert (mail.subject, mail.body) == ("Your summary", "Three invoices are open.")
    assert mail.reply_to == []  # the user answers themself: no Reply-To needed
    assert result.data == {
        "sent": True,
        "to": "alice@company.example",
        "subject": "Your summary",
        "message_id": mail.extra_headers["Message-ID"],
    }


def test_the_users_own_address_in_any_case_is_the_user(alice, sender, mailoutbox):
    result = send(alice, {"to": " ALICE@Company.Example ", "subject": "s", "body": "b"})

    assert result.ok and mailoutbox[0].to == ["alice@company.example"]


def test_an_allowed_domain_or_address_may_be_mailed(alice, sender, mailoutbox):
    to_domain = send(alice, {"to": "carol@example.org", "subject": "Hello", "body": "Hi."})
    to_address = send(alice, {"to": "Boss@Partner.example", "subject": "Hello", "body": "Hi."})

    assert to_domain.ok and to_address.ok
    assert [m.to for m in mailoutbox] == [["carol@example.org"], ["Boss@Partner.example"]]
    assert mailoutbox[0].reply_to == ["alice@company.example"]  # answers go to the user


@pytest.mark.parametrize(
    "address",
    [
        "mallory@evil.example",
        "carol@sub.example.org",  # a subdomain is another domain
        "carol@example.org.evil.example",
        "other@partner.example",  # only boss@ is listed there
    ],
)
def test_anyone_else_is_refused_and_nothing_is_sent(alice, sender, mailoutbox, address):
    result = send(alice, {"to": address, "subject": "Hello", "body": "Hi."})

    assert not result.ok and result.error_code == "tool_error"
    assert f"{address} is not one of them" in result.error
    assert "MAIL_ALLOWED_RECIPIENTS" in result.error
    assert mailoutbox == []


def test_with_no_allow_list_only_the_user_may_be_mailed(alice, settings, mailoutbox):
    settings.MAIL_ALLOWED_RECIPIENTS = []

    refused = send(alice, {"to": "carol@example.org", "subject": "s", "body": "b"})
    mine = send(alice, {"subject": "s", "body": "b"})

    assert not refused.ok and mine.ok
    assert [m.to for m in mailoutbox] == [["alice@company.example"]]


def test_not_an_address_and_a_user_without_one_are_refused(db, sender, mailoutbox):
    nobody = make_user("nomail")

    bad = send(nobody, {"to": "carol at example.org", "subject": "s", "body": "b"})
    mine = send(nobody, {"subject": "s", "body": "b"})

    assert not bad.ok and "is not an email address" in bad.error
    assert not mine.ok and "Your account has no email address" in mine.error
    assert mailoutbox == []


def test_subject_and_body_are_bounded_and_the_subject_is_one_line(alice, sender, mailoutbox):
    at_limit = send(alice, {"subject": "s" * 200, "body": "b" * 20_000})
    long_subject = send(alice, {"subject": "s" * 201, "body": "b"})
    long_body = send(alice, {"subject": "s", "body": "b" * 20_001})
    injected = send(alice, {"subject": "Hi\nBcc: everyone@evil.example", "body": "b"})
    trailing = send(alice, {"subject": "Hi\n", "body": "b"})  # ($ would let this one through)
    empty = send(alice, {"subject": "", "body": "b"})

    assert at_limit.ok
    for refused in (long_subject, long_body, injected, trailing, empty):
        assert not refused.ok and refused.error_code == "invalid_arguments"
    assert len(mailoutbox) == 1


def test_the_message_id_is_the_same_for_the_same_call_only(alice, sender, mailoutbox):
    send(alice, {"subject": "s", "body": "b"}, call_id="call_1")
    send(alice, {"subject": "s", "body": "b"}, call_id="call_1")  # the same call, sent again
    send(alice, {"subject": "s", "body": "b"}, call_id="call_2")
    send(alice, {"subject": "s", "body": "b"}, call_id="call_1", run_id=uuid.uuid4())

    ids = [m.extra_headers["Message-ID"] for m in mailoutbox]
    assert ids[0] == ids[1]
    assert len({ids[0], ids[2], ids[3]}) == 3
    assert ids[0].startswith("<") and ids[0].endswith("@platform.example>")
    assert all(mail.message()["Message-ID"] == ids[n] for n, mail in enumerate(mailoutbox))


def test_the_sender_defaults_to_default_from_email(alice, settings, mailoutbox):
    settings.MAIL_FROM = ""
    settings.DEFAULT_FROM_EMAIL = "noreply@site.example"

    send(alice, {"subject": "s", "body": "b"})

    assert mailoutbox[0].from_email == "noreply@site.example"
    assert mailoutbox[0].extra_headers["Message-ID"].endswith("@site.example>")


def test_the_tool_needs_approval_changes_data_reaches_outside_and_is_not_repeated():
    registered = get_tool("send_email")

    assert registered.approval and registered.side_effect and registered.outside
    assert registered.safe_to_repeat is False


# --- through a run: a staff member approves, the mail goes once --------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_run_mails_only_after_a_staff_approval_and_only_once(fake_openai, settings, mailoutbox):
    settings.TASKS_RUN_SYNC = True
    settings.MAIL_FROM = "assistant@platform.example"
    user = make_user("alice", email="alice@company.example")
    staff = make_user("stella", is_staff=True)
    make_agent(
        "mailer", is_entry=True, provider="openai", model="fake", tool_keys=["send_email"]
    )  # the agent does not ask for approvals: the tool does
    team = Team(fake_openai)
    team.script(
        "mailer",
        tool_call("send_email", {"subject": "Open invoices", "body": "INV-7 and INV-9."}),
        text("Sent."),
    )

    run = start(user, "mail me the open invoices")

    assert run.status == RunStatus.WAITING_HUMAN
    item = InboxItem.objects.get(run=run)
    assert (item.kind, item.tool) == ("tool_approval", "send_email")
    assert mailoutbox == []  # nothing is sent before a person approves
    api = client(staff)
    assert decide(api, item.id, decision="approve").status_code == 200
    assert decide(api, item.id, decision="approve").status_code == 409  # decided already
    (mail,) = mailoutbox
    assert mail.to == ["alice@company.example"] and mail.subject == "Open invoices"
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    (result,) = tool_results(team.requests["mailer"][1])
    assert result["ok"] and result["result"]["message_id"] == mail.extra_headers["Message-ID"]
    expected = send(user, {"subject": "x", "body": "y"}, call_id=item.tool_call_id, run_id=run.id)
    assert expected.data["message_id"] == mail.extra_headers["Message-ID"]  # run + call id
