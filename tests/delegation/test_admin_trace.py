"""The run page as a trace (nested, timed, with tool calls) and the runs list grouped by turn."""

from __future__ import annotations

import uuid
from datetime import timedelta
from html.parser import HTMLParser

import pytest
from django.utils import timezone

from chat.models import ChatMessage, ChatSession, MessageRole
from delegation.admin import trace_build
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from delegation.selectors import run_tree
from tests.factories import make_agent, make_child_run

pytestmark = pytest.mark.django_db

T0 = timezone.now() - timedelta(hours=1)


def child(caller, target, call_id, reason=""):
    return make_child_run(
        caller=Run.objects.get(pk=caller.pk),
        target=target,
        call_id=call_id,
        prompt="p",
        reason=reason,
        max_steps=5,
    )


def timed(run, start, end, **fields):
    Run.objects.filter(pk=run.pk).update(
        started_at=T0 + timedelta(seconds=start),
        finished_at=T0 + timedelta(seconds=end),
        **fields,
    )


def tool_message(run, **tool):
    ChatMessage.objects.create(
        id=uuid.uuid4(), session_id=run.session_id, role=MessageRole.TOOL, run=run, tool=tool
    )


class Nesting(HTMLParser):
    """Each trace node's run id mapped to the run id of the trace node around it."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str | None] = []
        self.parent: dict[str, str | None] = {}

    def handle_starttag(self, tag, attrs):
        if tag == "details":
            run = dict(attrs).get("data-run")
            if run:
                self.parent[run] = next((r for r in reversed(self.stack) if r), None)
            self.stack.append(run)

    def handle_endtag(self, tag):
        if tag == "details":
            self.stack.pop()


@pytest.fixture
def turn(user):
    boss, finance, sql = (make_agent(n) for n in ("boss", "finance", "sql"))
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=boss)
    root = run_create(agent=boss, user=user, session=session, task="q", transcript=[])
    f = child(root, finance, "c1", reason="budget words")
    s = child(f, sql, "c2")
    timed(root, 0, 10, status=RunStatus.SUCCEEDED, usage={"total_tokens": 42})
    timed(f, 2, 7, status=RunStatus.SUCCEEDED, answer="<b>12 euros</b>")
    timed(s, 3, 4, status=RunStatus.FAILED, error={"code": "model_error", "message": "boom"})
    tool_message(
        root, call_id="c1", name="delegate", arguments={"target": "finance"}, ok=True, result="ok"
    )
    tool_message(
        f,
        call_id="x",
        name="calculate",
        arguments={"expression": "3*4"},
        ok=True,
        result={"value": 12},
    )
    tool_message(
        s,
        call_id="y",
        name="calculate",
        arguments={"expression": "<script>"},
        ok=False,
        error={"code": "bad_args", "message": "not a number"},
    )
    return root, f, s


def test_trace_nests_children_with_bars_in_the_turn(turn):
    root, finance, sql = turn
    runs = run_tree(run=sql)
    [top] = trace_build(runs=runs, costs={}, current=sql.pk)
    assert top["run"].pk == root.pk and (top["left"], top["width"]) == ("0.00", "100.00")
    [f] = top["children"]
    assert (f["left"], f["width"]) == ("20.00", "50.00")
    [s] = f["children"]
    assert (s["left"], s["width"], s["current"]) == ("30.00", "10.00", True)
    assert top["tools"][0]["child"] == finance.pk  # the delegate call points at its run
    assert f["tools"][0]["arguments"] == '{\n  "expression": "3*4"\n}'
    assert s["tools"][0]["ok"] is False and "not a number" in s["tools"][0]["result"]


def test_run_page_shows_the_trace_first_and_raw_fields_last(admin_client, turn):
    root, finance, sql = turn
    page = admin_client.get(f"/admin/delegation/run/{finance.pk}/change/").content.decode()
    trace = page.split('id="trace"', 1)[1].split('id="delegation-tree"', 1)[0]
    assert trace.index(f'data-run="{root.pk}"') < trace.index(f'data-run="{finance.pk}"')
    assert trace.index(f'data-run="{finance.pk}"') < trace.index(f'data-run="{sql.pk}"')
    nesting = Nesting()
    nesting.feed(page)
    assert nesting.parent == {
        str(root.pk): None,
        str(finance.pk): str(root.pk),
        str(sql.pk): str(finance.pk),
    }
    assert "left:20.00%;width:50.00%" in trace
    assert "budget words" in trace and "42 tokens" in trace and "boom" in trace
    assert "&quot;expression&quot;: &quot;3*4&quot;" in trace and "&quot;value&quot;: 12" in trace
    assert "&lt;script&gt;" in trace and "<script>" not in trace
    assert "&lt;b&gt;12 euros&lt;/b&gt;" in trace
    assert f'href="#run-{finance.pk}"' in trace
    order = [page.index(m) for m in ('id="trace"', 'id="delegation-tree"', 'id="raw-fields"')]
    assert order == sorted(order)
    raw = page.split('id="raw-fields"', 1)[1]
    assert "field-task" in raw  # the model's fields, collapsed (no `open`):
    assert '<details id="raw-fields" style="margin:1em 0">' in page


def test_changelist_shows_one_row_per_turn_with_its_experts(admin_client, turn):
    root, finance, sql = turn
    page = admin_client.get("/admin/delegation/run/").content.decode()
    rows = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert rows.count("<tr") == 1
    assert f'/admin/delegation/run/{root.pk}/change/#trace">trace of 3 run(s)' in rows
    assert rows.index(f"/run/{finance.pk}/change/") < rows.index(f"/run/{sql.pk}/change/")
    assert "padding-left:1.2em" in rows  # sql nested under finance
    every = admin_client.get("/admin/delegation/run/?runs=all").content.decode()
    assert every.split("<tbody>", 1)[1].split("</tbody>", 1)[0].count("<tr") == 3
    searched = admin_client.get(f"/admin/delegation/run/?q={sql.pk}").content.decode()
    assert f'/admin/delegation/run/{sql.pk}/change/#trace">its turn' in searched
