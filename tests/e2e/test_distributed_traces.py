"""OpenTelemetry traces from real worker processes, read back from a local OTLP collector: a
turn is one trace, each run an `invoke_agent` span nested as the delegation tree (whichever
worker ran it, after a takeover too), model calls and tools below their run, a wait for a
person as span events, and nothing of what people wrote unless an operator opts in."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest

from config.telemetry import span_id_of
from delegation.humans.decisions import item_decide
from delegation.humans.models import InboxItem
from delegation.models import Run, RunStatus
from delegation.turns import turn_start
from tests.delegation.conftest import make_team
from tests.factories import make_user
from tests.fake_openai import Reply, Team, delegate, text, tool_call
from tests.otlp_collector import Collector, ExportedSpan
from tests.server_logs import output_path
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

SECRET = "codeword-Saffron-4711"  # in the user's message and the answers: never in a span


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    yield server
    server.close()


def worker_env(fake_openai, collector: Collector, **extra: str) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test-key",
        "OPENAI_MAX_RETRIES": "0",
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",  # export within a moment, not every 5 s
        "LOG_FORMAT": "json",
        **extra,
    }


def start(user, text_: str) -> Run:
    turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text_)
    return Run.objects.get(parent__isnull=True)


def hexid(run: Run) -> str:
    return format(span_id_of(run.id), "016x")


def the_one(spans: list[ExportedSpan], **attributes: object) -> ExportedSpan:
    found = [s for s in spans if all(s.attributes.get(k) == v for k, v in attributes.items())]
    assert len(found) == 1, (attributes, [(s.name, s.attributes) for s in spans])
    return found[0]


def test_a_delegated_turn_with_a_tool_and_an_approval_is_one_trace(collector, workers, fake_openai):
    agents = make_team(boss=["tasks"], tasks=[])
    agents["tasks"].tool_keys = ["calculate", "create_task"]
    agents["tasks"].require_approval = True
    agents["tasks"].approval_tool_keys = ["create_task"]
    agents["tasks"].save()
    team = Team(fake_openai)
    team.script("boss", delegate("tasks", f"note {SECRET}"), text(f"boss: done {SECRET}"))
    team.script(
        "tasks",
        tool_call("calculate", {"expression": "6*7"}),
        tool_call("create_task", {"title": f"buy milk {SECRET}"}),
        text(f"tasks: 42, noted {SECRET}"),
    )
    workers.start("w1", **worker_env(fake_openai, collector))
    user = make_user("alice")
    root = start(user, f"what is 6*7? {SECRET}")

    wait_until(lambda: InboxItem.objects.exists(), timeout=60)
    item_decide(
        item=InboxItem.objects.get(), user=make_user("boss", is_staff=True), decision="approve"
    )
    wait_until(lambda: Run.objects.get(pk=root.pk).status == RunStatus.SUCCEEDED, timeout=60)
    child = Run.objects.get(parent=root)
    wait_until(lambda: len(collector.named("invoke_agent")) == 2, timeout=30)
    wait_until(lambda: len(collector.named("chat ")) == 5, timeout=30)

    trace = root.id.hex
    boss = the_one(collector.named("invoke_agent"), **{"gen_ai.agent.name": "boss"})
    tasks = the_one(collector.named("invoke_agent"), **{"gen_ai.agent.name": "tasks"})
    assert (boss.trace_id, boss.span_id, boss.parent_span_id) == (trace, hexid(root), "")
    assert (tasks.trace_id, tasks.span_id, tasks.parent_span_id) == (
        trace,
        hexid(child),
        hexid(root),
    )
    assert boss.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert boss.attributes["gen_ai.conversation.id"] == str(root.session_id)
    assert boss.attributes["agent_platform.run.status"] == "succeeded"
    assert boss.attributes["gen_ai.usage.input_tokens"] > 0

    # Model calls and tools below the run that made them, with their usage.
    chats = collector.named("chat ")
    assert {(c.trace_id, c.parent_span_id) for c in chats} == {
        (trace, hexid(root)),
        (trace, hexid(child)),
    }
    assert all(
        c.name == "chat fake" and c.attributes["gen_ai.provider.name"] == "openai" for c in chats
    )
    assert all(c.attributes["gen_ai.usage.output_tokens"] > 0 for c in chats)
    finishes = sorted(c.attributes["gen_ai.response.finish_reasons"][0] for c in chats)
    assert finishes == ["stop", "stop", "tool_calls", "tool_calls", "tool_calls"]
    calculate = the_one(collector.named("execute_tool"), **{"gen_ai.tool.name": "calculate"})
    assert (calculate.trace_id, calculate.parent_span_id) == (trace, hexid(child))

    # The approval: asked and decided, on the expert's span.
    events = [name for name, _ in tasks.events]
    assert events == ["agent_platform.person.asked", "agent_platform.person.decided"]
    assert tasks.events[1][1]["agent_platform.wait.outcome"] == "approve"

    # The official instrumentations: Celery's task spans, psycopg's queries inside the turn.
    assert any(s.attributes.get("celery.action") == "run" for s in collector.spans)
    assert any(
        s.trace_id == trace
        and s.attributes.get("db.system", s.attributes.get("db.system.name")) == "postgresql"
        for s in collector.spans
    )

    # Content is off: the codeword is in no span, and no log line.
    exported = json.dumps([(s.name, s.attributes, s.events) for s in collector.spans], default=str)
    assert SECRET not in exported
    log = output_path("celery-w1.log").read_text(errors="replace")
    assert SECRET not in log


def test_a_run_taken_over_after_its_worker_died_keeps_its_place_in_the_trace_with_its_text(
    collector, workers, fake_openai
):
    make_team(boss=["slow"], slow=[])
    team = Team(fake_openai)
    team.script("boss", delegate("slow", "count"), text("boss: done"))
    team.script("slow", Reply(text_chunks=["lost"], stall_seconds=30), text("slow recovered"))
    env = worker_env(
        fake_openai,
        collector,
        RUN_LEASE_SECONDS="2",
        SWEEP_INTERVAL_SECONDS="1",
        OTEL_GENAI_CAPTURE_CONTENT="true",  # an operator opted in: the text is recorded
    )
    first = workers.start("w1", beat=True, **env)
    root = start(make_user("alice"), "go")
    wait_until(lambda: len(team.requests.get("slow", [])) == 1, timeout=60)
    workers.kill(first)
    workers.start("w2", beat=True, **env)
    wait_until(lambda: Run.objects.get(pk=root.pk).status == RunStatus.SUCCEEDED, timeout=90)
    child = Run.objects.get(parent=root)
    wait_until(lambda: len(collector.named("invoke_agent")) == 2, timeout=30)

    slow = the_one(collector.named("invoke_agent"), **{"gen_ai.agent.name": "slow"})
    assert (slow.trace_id, slow.span_id, slow.parent_span_id) == (
        root.id.hex,
        hexid(child),
        hexid(root),
    )
    assert slow.attributes["agent_platform.run.status"] == "succeeded"
    assert json.loads(slow.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == "count"
    assert "slow recovered" in slow.attributes["gen_ai.output.messages"]
    # The second worker's call is below the same run span (the first one's died unexported).
    recovered = [c for c in collector.named("chat ") if c.parent_span_id == hexid(child)]
    assert recovered and all(c.trace_id == root.id.hex for c in recovered)
