"""Exactly once across real processes (Postgres, Redis, Celery workers, an MCP server over HTTP):
a worker SIGKILLed while an MCP call not safe to repeat is under way is taken over, and the new
worker asks a person instead of calling again; the ledger shows the one call that happened."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.models import McpServer, McpTool
from agents.mcp.services import server_sync
from delegation.humans.decisions import item_decide
from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from tests.factories import make_user
from tests.fake_openai import Team, text, tool_call
from tests.humans.conftest import agent
from tests.humans.helpers import tool_results
from tests.mcp.conftest import http_server_process, ledger_lines

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def wait_until(predicate, timeout: float = 60) -> None:
    """Poll until `predicate` holds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.1)


@pytest.fixture
def slow_ledger(db, ledger_log: Path) -> Iterator[McpServer]:
    """The test server over HTTP whose `record` writes, then takes 30 s to answer; synced, with
    `record` run without approval (so only the crash rule can put it to a person)."""
    with http_server_process(ledger_log, "--record-delay", "30") as url:
        server = McpServer.objects.create(
            name="ledger-http", display_name="Ledger", transport="http", url=url, call_timeout=60
        )
        server_sync(server=server)
        McpTool.objects.filter(name="record").update(approval="never")
        yield server


def test_a_worker_killed_during_an_mcp_call_leaves_it_to_a_person_not_a_repeat(
    workers, user, fake_openai, slow_ledger, ledger_log
):
    team = Team(fake_openai)
    agent("clerk", is_entry=True, tool_keys=["mcp.ledger-http.record"])
    team.script("clerk", tool_call("mcp__ledger-http__record", {"note": "kill-1"}), text("Done."))
    env = {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "RUN_LEASE_SECONDS": "2",
        "SWEEP_INTERVAL_SECONDS": "1",
    }
    first = workers.start("w1", **env)
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text="go")
    wait_until(lambda: ledger_lines(ledger_log) == ["kill-1"])  # the call reached the server
    workers.kill(first)  # ...and its worker dies before the answer comes back

    workers.start("w2", beat=True, **env)
    wait_until(lambda: InboxItem.objects.filter(run=sent.run).exists())
    item = InboxItem.objects.get(run=sent.run)
    assert (item.reason, item.tool) == ("may_have_run", "mcp__ledger-http__record")
    wait_until(lambda: Run.objects.get(pk=sent.run.id).status == RunStatus.WAITING_HUMAN)
    staff = make_user("stella", is_staff=True, is_superuser=True)
    item_decide(item=item, user=staff, decision="reject")
    wait_until(lambda: Run.objects.get(pk=sent.run.id).status == RunStatus.SUCCEEDED)
    assert ledger_lines(ledger_log) == ["kill-1"]  # called once: the crash did not repeat it
    (result,) = tool_results(team.requests["clerk"][-1])
    assert result["error"]["code"] == "tool_not_repeated"
    assert len(team.requests["clerk"]) == 2  # the model was not asked again for the call
