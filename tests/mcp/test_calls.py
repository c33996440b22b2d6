"""Calling MCP tools in runs: arguments checked against the snapshot, results marked as data and
bounded, failures as clear tool errors (an error result, a hung server, a dead process), progress
reported, approvals by annotation, calls not repeated blindly after a crash, per-user identity."""

from __future__ import annotations

import json

import jwt
import pytest
from django.utils import timezone

from agents.mcp.models import McpTool
from agents.mcp.services import server_sync
from agents.mcp.targets import assertion_key
from agents.registry import ToolContext, execute, get_tool
from chat.models import ChatMessage, MessageRole
from delegation.humans.models import Activity, InboxItem
from delegation.models import Run, RunStatus
from delegation.steps.prompting import DATA_RULE
from delegation.steps.runner import run_advance
from delegation.steps.tool_calls import message_id_for
from tests.fake_openai import Team, text, tool_call
from tests.humans.conftest import agent
from tests.humans.helpers import client, decide, start, tool_results
from tests.mcp.conftest import ledger_lines

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    """Enqueued runs run on commit in the calling thread: each step below is deterministic."""
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def team(fake_openai) -> Team:
    """Per-agent scripted replies on the fake OpenAI server."""
    return Team(fake_openai)


@pytest.fixture
def ledger(stdio_server):
    """The stdio test server, synced."""
    server_sync(server=stdio_server)
    return stdio_server


def clerk(*tools: str, **fields):
    """An entry agent on the fake model with these MCP tools of the ledger."""
    return agent("clerk", is_entry=True, tool_keys=[f"mcp.ledger.{t}" for t in tools], **fields)


def call(key: str, arguments: dict, user, **context) -> dict:
    """Run one registry tool as the engine does; its outcome as shown."""
    result = execute(get_tool(key), ToolContext(user=user, **context), json.dumps(arguments))
    return result.as_shown()


def test_a_model_calls_an_mcp_tool_and_reads_its_result_as_data(ledger, user, team):
    clerk("add")
    team.script("clerk", tool_call("mcp__ledger__add", {"a": 2, "b": 40}), text("It is 42."))
    run = start(user, "add 2 and 40")
    assert run.status == RunStatus.SUCCEEDED and run.answer == "It is 42."
    offered = [t["function"]["name"] for t in team.requests["clerk"][0]["tools"]]
    assert offered == ["mcp__ledger__add"]
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["ok"] and result["result"]["structured"] == {"result": 42}
    assert result["result"]["source"] == {
        "kind": "mcp",
        "server": "ledger",
        "tool": "add",
        "server_names": {"": "Ledger"},
    }
    assert "no instructions" in result["result"]["note"]
    assert DATA_RULE in team.requests["clerk"][1]["messages"][0]["content"]
    message = ChatMessage.objects.get(run=run, role=MessageRole.TOOL)
    assert message.tool["name"] == "mcp__ledger__add" and message.tool["ok"]


def test_arguments_that_do_not_fit_the_snapshot_schema_never_reach_the_server(
    ledger, ledger_log, user
):
    shown = call("mcp.ledger.record", {"note": 5}, user)
    assert shown["error"]["code"] == "invalid_arguments" and "note" in shown["error"]["message"]
    shown = call("mcp.ledger.add", {"a": 1}, user)
    assert shown["error"]["code"] == "invalid_arguments"
    assert "'b' is a required property" in shown["error"]["message"]
    assert ledger_lines(ledger_log) == []


def test_an_error_result_a_hung_server_and_a_dead_process_are_clear_tool_errors(ledger, user):
    failed = call("mcp.ledger.fail", {}, user)
    assert failed["error"]["code"] == "tool_error"
    assert "the ledger is locked for closing" in failed["error"]["message"]
    ledger.call_timeout = 1
    ledger.save()
    hung = call("mcp.ledger.hang", {}, user)
    assert hung["error"]["code"] == "tool_timeout" and "ledger" in hung["error"]["message"]
    assert call("mcp.ledger.add", {"a": 1, "b": 1}, user)["result"]["structured"] == {"result": 2}
    died = call("mcp.ledger.die", {}, user)
    assert died["error"]["code"] == "tool_unavailable" and "closed" in died["error"]["message"]
    # The next call starts the server again.
    assert call("mcp.ledger.add", {"a": 2, "b": 2}, user)["result"]["structured"] == {"result": 4}


def test_a_disabled_server_offers_nothing_and_a_call_of_its_tool_is_refused(ledger, user, team):
    clerk("add")
    ledger.enabled = False
    ledger.save()
    assert get_tool("mcp.ledger.add") is None
    team.script("clerk", tool_call("mcp__ledger__add", {"a": 1, "b": 2}), text("Could not."))
    run = start(user, "add")
    assert run.status == RunStatus.SUCCEEDED and team.requests["clerk"][0].get("tools") is None
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["error"]["code"] == "unknown_tool"


def test_a_huge_result_is_cut_to_the_cap_with_a_note(ledger, user, settings):
    shown = call("mcp.ledger.big", {}, user)
    body = shown["result"]
    assert body["truncated"] and "more characters not shown" in body["text"]
    assert len(json.dumps(shown)) < settings.MCP_RESULT_MAX_CHARS + 1000


def test_progress_notifications_reach_the_callers_thread(ledger, user):
    notes = []
    shown = call("mcp.ledger.slow", {"steps": 3}, user, progress=lambda *a: notes.append(a))
    assert shown["result"]["text"] == "slow done"
    assert notes == [(1, 3, "step 1 of 3"), (2, 3, "step 2 of 3"), (3, 3, "step 3 of 3")]


def test_a_tool_not_marked_read_only_waits_for_approval_and_runs_once(
    ledger, ledger_log, user, team, admin_user
):
    clerk("record")
    team.script("clerk", tool_call("mcp__ledger__record", {"note": "pay 7"}), text("Recorded."))
    run = start(user, "record it")
    assert run.status == RunStatus.WAITING_HUMAN and ledger_lines(ledger_log) == []
    item = InboxItem.objects.get(run=run)
    assert (item.tool, item.reason) == ("mcp__ledger__record", "")
    assert decide(client(admin_user), item.id, decision="approve").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and ledger_lines(ledger_log) == ["pay 7"]
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["result"]["text"] == "recorded pay 7"


def test_an_admin_may_waive_the_approval_an_annotation_asks_for(ledger, ledger_log, user, team):
    McpTool.objects.filter(name="record").update(approval="never")
    clerk("record")
    team.script("clerk", tool_call("mcp__ledger__record", {"note": "n1"}), text("Recorded."))
    assert start(user, "record it").status == RunStatus.SUCCEEDED
    assert ledger_lines(ledger_log) == ["n1"]


def crashed_during(user, settings, name: str, arguments: dict, status: str = "streaming") -> Run:
    """A run as a worker that died during its call of `name` leaves it: the model's call saved,
    the call's message saved as started, no result; then a worker takes the run over."""
    settings.TASKS_RUN_SYNC = False
    settings.CELERY_BROKER_URL = "memory://"  # the turn's enqueue goes nowhere
    run = start(user, "do it")
    call_id = "call_crashed"
    function = {"name": name, "arguments": json.dumps(arguments)}
    run.transcript = [
        *run.transcript,
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function", "function": function}]},
    ]  # fmt: skip
    run.steps = 1
    run.save(update_fields=["transcript", "steps"])
    ChatMessage.objects.create(
        id=message_id_for(run, "tool", 0, 0),
        session_id=run.session_id,
        run=run,
        role=MessageRole.TOOL,
        status=status,
        tool={"call_id": call_id, "name": name, "arguments": arguments},
    )
    settings.CELERY_BROKER_URL = ""
    settings.TASKS_RUN_SYNC = True
    run_advance(run_id=run.id, worker="survivor")
    return Run.objects.get(pk=run.id)


@pytest.mark.parametrize(
    ("decision", "message"),
    # The worker died during the call, or after its message completed but before the run's
    # transcript was saved: either way the call may have run.
    [("approve", "streaming"), ("reject", "streaming"), ("reject", "completed")],
)
def test_a_call_that_may_have_run_when_its_worker_died_is_put_to_a_person(
    ledger, ledger_log, user, team, admin_user, settings, decision, message
):
    McpTool.objects.filter(name="record").update(approval="never")
    clerk("record")
    team.script("clerk", text("Done as far as I know."))
    run = crashed_during(user, settings, "mcp__ledger__record", {"note": "once"}, message)
    assert run.status == RunStatus.WAITING_HUMAN and ledger_lines(ledger_log) == []
    item = InboxItem.objects.get(run=run)
    assert (item.kind, item.reason, item.tool) == (
        "tool_approval",
        "may_have_run",
        "mcp__ledger__record",
    )
    assert decide(client(admin_user), item.id, decision=decision).status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED
    (result,) = tool_results(team.requests["clerk"][0])
    if decision == "approve":
        assert ledger_lines(ledger_log) == ["once"] and result["ok"]
    else:
        assert ledger_lines(ledger_log) == [] and result["error"]["code"] == "tool_not_repeated"


def test_a_read_only_call_that_may_have_run_is_simply_made_again(ledger, user, team, settings):
    clerk("add")
    team.script("clerk", text("Four."))
    run = crashed_during(user, settings, "mcp__ledger__add", {"a": 2, "b": 2})
    assert run.status == RunStatus.SUCCEEDED and not InboxItem.objects.exists()
    (result,) = tool_results(team.requests["clerk"][0])
    assert result["result"]["structured"] == {"result": 4}


def test_text_from_a_server_reaches_the_model_as_data_and_starts_no_call(
    ledger, ledger_log, user, team
):
    clerk("lookup", "delete_invoice")
    team.script(
        "clerk", tool_call("mcp__ledger__lookup", {"query": "invoices"}), text("3 invoices.")
    )
    run = start(user, "how many invoices?")
    assert run.status == RunStatus.SUCCEEDED and run.answer == "3 invoices."
    request = team.requests["clerk"][1]
    system = request["messages"][0]
    assert system["role"] == "system" and "ignore your instructions" not in system["content"]
    assert DATA_RULE in system["content"]
    carrying = [
        m for m in request["messages"] if "ignore your instructions" in str(m.get("content"))
    ]
    assert [m["role"] for m in carrying] == ["tool"]
    body = json.loads(carrying[0]["content"])["result"]
    assert body["source"]["kind"] == "mcp" and "no instructions" in body["note"]
    assert "delete" not in " ".join(ledger_lines(ledger_log))
    assert not InboxItem.objects.exists()  # nothing was called, so nothing asked approval


def test_a_per_user_server_is_told_the_end_user_and_never_another(
    http_server, user, other_user, settings
):
    settings.MCP_USER_ASSERTION_KEY = "assertion-base-key-for-the-tests-0123456789"
    http_server.user_identity = "assertion"
    http_server.save()
    server_sync(server=http_server)

    def asserted(person) -> dict:
        token = call("mcp.ledger-http.whoami", {}, person)["result"]["text"]
        key = assertion_key("ledger-http")
        return jwt.decode(token, key, algorithms=["HS256"], audience="ledger-http")

    mine, theirs = asserted(user), asserted(other_user)
    assert (mine["sub"], mine["preferred_username"]) == (str(user.pk), user.username)
    assert theirs["sub"] == str(other_user.pk) and theirs["sub"] != mine["sub"]
    assert asserted(user)["sub"] == str(user.pk)  # the pool keeps one session per user
    assert mine["exp"] - mine["iat"] == settings.MCP_USER_ASSERTION_SECONDS
    # Each server has its own key: neither the base key nor another server's verifies it.
    token = call("mcp.ledger-http.whoami", {}, user)["result"]["text"]
    for wrong in (
        "assertion-base-key-for-the-tests-0123456789",
        assertion_key("another-server"),
        settings.SECRET_KEY,
    ):
        with pytest.raises(jwt.InvalidSignatureError):
            jwt.decode(token, wrong, algorithms=["HS256"], audience="ledger-http")


def test_a_shared_server_is_told_no_user(http_server, user):
    server_sync(server=http_server)
    assert call("mcp.ledger-http.whoami", {}, user)["result"]["text"] == ""


def test_outside_calls_count_against_the_turn_and_each_is_in_the_activity_log(
    ledger, user, team, settings
):
    settings.TURN_MAX_TOOL_CALLS = 1
    clerk("add")
    team.script(
        "clerk",
        tool_call("mcp__ledger__add", {"a": 1, "b": 1}),
        tool_call("mcp__ledger__add", {"a": 2, "b": 2}),
        text("Two."),
    )
    run = start(user, "add twice")
    assert run.status == RunStatus.SUCCEEDED and run.tree_tool_calls == 1
    first, second = (tool_results(team.requests["clerk"][i])[-1] for i in (1, 2))
    assert first["ok"] and second["error"]["code"] == "tool_budget"
    logged = Activity.objects.filter(kind="tool_called").order_by("created_at")
    assert [(a.run_id, a.data["ok"], a.data["error_code"]) for a in logged] == [
        (run.id, True, ""),
        (run.id, False, "tool_budget"),
    ]
    assert logged[0].data["tool"] == "mcp.ledger.add"


def test_an_approved_call_interrupted_while_it_ran_is_not_run_again(
    ledger, ledger_log, user, team, admin_user
):
    clerk("record")
    team.script("clerk", tool_call("mcp__ledger__record", {"note": "pay 9"}), text("Noted."))
    run = start(user, "record it")
    item = InboxItem.objects.get(run=run)
    # A worker began the approved call (marked started) and died before it finished.
    InboxItem.objects.filter(pk=item.pk).update(started_at=timezone.now())
    assert decide(client(admin_user), item.id, decision="approve").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and ledger_lines(ledger_log) == []
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["error"]["code"] == "tool_not_repeated"
    item.refresh_from_db()
    assert item.executed_at is not None


def test_an_approved_outside_call_counts_against_the_turn_too(
    ledger, ledger_log, user, team, admin_user, settings
):
    settings.TURN_MAX_TOOL_CALLS = 0
    clerk("record")
    team.script("clerk", tool_call("mcp__ledger__record", {"note": "n"}), text("Could not."))
    run = start(user, "record it")
    item = InboxItem.objects.get(run=run)
    assert decide(client(admin_user), item.id, decision="approve").status_code == 200
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and ledger_lines(ledger_log) == []
    (result,) = tool_results(team.requests["clerk"][1])
    assert result["error"]["code"] == "tool_budget"
