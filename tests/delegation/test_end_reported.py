"""An expert whose answer ends it reports to its caller in its answering step's own commit: its
answer, its end, the caller's message of the delegation, the activity row and the caller's
resumption are written together; and every model call of a turn, whatever way its step ends
(answered, asked, refused, failed), is one ledger row, which the turn's tokens are summed from."""

from __future__ import annotations

import uuid

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.models import Q

from chat.models import ChatMessage, MessageRole
from delegation.humans.models import Activity, ActivityKind
from delegation.models import Run, RunStatus
from delegation.runs.hooks import HOOKS
from delegation.tasks import advance_run
from delegation.tree import budget, report
from delegation.usage.models import UsageRecord
from tests.delegation.conftest import make_team
from tests.delegation.test_runner import start_run
from tests.fake_openai import Reply, delegate, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)


def run_turn(root: Run, published: list) -> None:
    """Run the turn as a worker does: its task bodies, each taking what the last one sent."""
    pending = [str(root.pk)]
    while pending:
        advance_run.run(pending.pop(0))
        pending += [args[0] for args in published]
        published.clear()


def assert_counted_once(root: Run, team) -> None:
    """Each model call the turn made is one ledger row, and the turn's tokens, as its budget
    reads them, are what its runs saved as their own usage."""
    calls = sum(len(bodies) for bodies in team.requests.values())
    assert UsageRecord.objects.filter(root_id=root.pk).count() == calls > 0
    runs = Run.objects.filter(Q(pk=root.pk) | Q(root_id=root.pk))
    saved = sum(run.usage.get("total_tokens", 0) for run in runs)
    assert budget.budget_tokens_used(root_id=root.pk) == saved > 0


def failing_activity(monkeypatch, fails) -> list:
    """Activity rows fail to write while `fails(row, failed so far)`: the rows that failed."""
    record, failures = HOOKS.activity, []

    def flaky(**row):
        if fails(row, failures):
            failures.append(row)
            raise DatabaseError("the activity row's write failed")
        return record(**row)

    monkeypatch.setattr(HOOKS, "activity", flaky)
    return failures


class Writes:
    """Every statement and commit on the test's connection, in order (a statement outside a
    transaction block is followed by its own commit)."""

    def __init__(self, monkeypatch) -> None:
        self.log: list[str] = []
        commit = connection.commit

        def logged_commit() -> None:
            self.log.append("COMMIT")
            commit()

        monkeypatch.setattr(connection, "commit", logged_commit)

    def __call__(self, execute, sql, params, many, context):
        self.log.append(f"{sql} {params!r}")
        result = execute(sql, params, many, context)
        if not context["connection"].in_atomic_block:  # autocommitted: a transaction of its own
            self.log.append("COMMIT")
        return result

    def commit_of(self, *needles: str) -> int:
        """Which commit the first statement containing all `needles` (in its SQL or its
        values) belongs to (0, 1, …)."""
        commits = 0
        for sql in self.log:
            if sql == "COMMIT":
                commits += 1
            elif all(needle in sql for needle in needles):
                return commits
        raise AssertionError(f"no statement with {needles!r}")


def test_an_expert_s_answer_end_report_and_its_caller_s_resumption_are_one_commit(
    team, user, sent, monkeypatch
):
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "Q3?"), text("Finance: 60."))
    team.script("expert", text("The Q3 budget is 60."))
    root = start_run(user, agents["lead"])
    writes = Writes(monkeypatch)
    with connection.execute_wrapper(writes):
        run_turn(root, sent)
    expert = Run.objects.get(parent=root)
    assert expert.status == RunStatus.SUCCEEDED
    end = writes.commit_of(
        'UPDATE "delegation_run" SET "status" = %s, "answer"', "'The Q3 budget is 60.'"
    )
    assert writes.commit_of('INSERT INTO "humans_activity"') < end  # the ask, in the lead's step
    together = [
        ('INSERT INTO "chat_chatmessage"', "'The Q3 budget is 60.'"),  # the expert's answer
        # the lead's message of the delegation, with the expert's result
        ('INSERT INTO "chat_chatmessage"', "MessageRole.TOOL", "MessageStatus.COMPLETED"),
        ('INSERT INTO "humans_activity"', "Expert → Lead: succeeded"),
        ('"lease_token" = %s, "worker" = %s, "queued_at" = %s, "waiting_since"',),  # resumed
    ]
    assert [writes.commit_of(*needles) for needles in together] == [end] * len(together)
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.answer == "Finance: 60."
    assert_counted_once(root, team)


def test_the_caller_s_message_written_with_the_expert_s_answer_keeps_all_it_had(team, user, sent):
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "Q3?"), text("Finance: 60."))
    team.script("expert", text("The Q3 budget is 60."))
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    expert = Run.objects.get(parent=root)
    told = ChatMessage.objects.get(run=root, role=MessageRole.TOOL)
    answer = ChatMessage.objects.get(run=expert, role=MessageRole.AGENT)
    assert (answer.content, answer.status) == ("The Q3 budget is 60.", "completed")
    # As the lead's ask wrote it (whose it is, when it was asked), with the expert's result.
    assert (told.session_id, told.agent, told.content, told.model) == (
        root.session_id,
        {"kind": "entry", "name": "lead", "display_name": "Lead", "depth": 0, "path": ["lead"]},
        "",
        "",
    )
    assert (told.citations, told.usage, told.status) == ([], None, "completed")
    assert told.created_at < answer.created_at < told.updated_at
    assert told.tool == {
        "call_id": expert.parent_tool_call_id,
        "name": "delegate",
        "arguments": {"target": "expert", "task": "Q3?", "context": None, "reason": ""},
        "delegation": {
            "run_id": str(expert.pk),
            "target": "expert",
            "display_name": "Expert",
            "task": "Q3?",
            "status": "succeeded",
        },
        "ok": True,
        "result": {"agent": "Expert", "answer": "The Q3 budget is 60."},
        "summary": "Expert answered",  # what people read of it, as the replay shows it
    }


@pytest.mark.parametrize(
    "shape",
    [
        "depth 1",
        "depth 2",
        "depth 2, one refused",
        "depth 2, all refused",
        "depth 2, second refused",
        "fan-out",
        "inline",
    ],
)
def test_a_turn_counts_each_call_s_tokens_once(team, user, sent, settings, shape):
    if shape.startswith("depth 2"):
        agents = make_team(lead=["mid"], mid=["leaf"], leaf=[])
        team.script("lead", delegate("mid"), text("lead done"))
        # An expert's step that asks: its tokens counted by its first take, or on their own
        # when every ask is refused.
        asks = {
            "depth 2": [("delegate", {"target": "leaf", "task": "x"})],
            "depth 2, one refused": [
                ("delegate", {"target": "nobody", "task": "x"}),
                ("delegate", {"target": "leaf", "task": "y"}),
            ],
            "depth 2, all refused": [("delegate", {"target": "nobody", "task": "x"})],
            "depth 2, second refused": [
                ("delegate", {"target": "leaf", "task": "x"}),
                ("delegate", {"target": "nobody", "task": "y"}),
            ],
        }[shape]
        team.script("mid", tool_calls(*asks), text("mid done"))
        team.script("leaf", text("leaf done"))
    elif shape == "fan-out":
        agents = make_team(lead=["a", "b"], a=[], b=[])
        team.script(
            "lead",
            tool_calls(
                ("delegate", {"target": "a", "task": "x"}),
                ("delegate", {"target": "b", "task": "y"}),
            ),
            text("lead done"),
        )
        team.script("a", text("a done"))
        team.script("b", text("b done"))
    else:
        agents = make_team(lead=["expert"], expert=[])
        team.script("lead", delegate("expert"), text("lead done"))
        team.script("expert", text("expert done"))
    if shape == "inline":
        settings.TASKS_RUN_SYNC = True
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.answer == "lead done"
    assert Run.objects.filter(root=root).exclude(status=RunStatus.SUCCEEDED).count() == 0
    assert_counted_once(root, team)


def test_a_report_that_fails_undoes_the_expert_s_end_and_its_caller_still_hears(
    team, user, sent, monkeypatch
):
    agents = make_team(lead=["expert"], expert=[])
    team.script("lead", delegate("expert", "Q3?"), text("The expert could not answer."))
    team.script("expert", text("The Q3 budget is 60."))
    answered = ActivityKind.DELEGATION_ANSWERED
    failures = failing_activity(
        monkeypatch, lambda row, failed: row["kind"] == answered and not failed
    )
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    expert = Run.objects.get(parent=root)
    # Its end went with the report: neither stands; the run ended failed instead, and that
    # end was reported on its own, so the lead went on and answered.
    assert failures and expert.status == RunStatus.FAILED
    assert expert.error["code"] == "internal_error"
    activity = set(Activity.objects.filter(run=expert).values_list("kind", flat=True))
    assert activity == {ActivityKind.ERROR, ActivityKind.DELEGATION_FAILED}
    message = ChatMessage.objects.get(run=root, role=MessageRole.TOOL)
    assert message.tool["ok"] is False and message.tool["delegation"]["status"] == "failed"
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED
    assert_counted_once(root, team)  # the expert's call a ledger row, written by its charge


def test_an_ask_that_fails_after_its_take_counted_the_step_s_tokens_counts_them_once(
    team, user, sent, monkeypatch
):
    agents = make_team(lead=["mid"], mid=["leaf"], leaf=[])
    team.script("lead", delegate("mid"), text("lead done"))
    team.script("mid", delegate("leaf"), text("mid done"))
    # The middle expert's ask fails, after its take counted its tokens.
    failures = failing_activity(
        monkeypatch,
        lambda row, failed: (
            row["kind"] == ActivityKind.DELEGATION_ASKED and row["run"].parent_id is not None
        ),
    )
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    mid = Run.objects.get(parent=root)
    assert failures and mid.status == RunStatus.FAILED
    assert not Run.objects.filter(parent=mid).exists()  # the take and the leaf went together
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.tree_delegations == 1
    assert_counted_once(root, team)  # its call a ledger row, written by the failure's charge


def test_an_expert_s_first_ask_with_broken_arguments_is_refused_plainly(team, user, sent):
    agents = make_team(lead=["mid"], mid=["leaf"], leaf=[])
    team.script("lead", delegate("mid"), text("lead done"))
    broken = Reply(
        tool_calls=[
            ("delegate", '{"target": "leaf", '),
            ("delegate", '{"target": "leaf", "task": "y"}'),
        ]
    )
    team.script("mid", broken, text("mid done"))
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    mid = Run.objects.get(parent=root)
    refused, asked = ChatMessage.objects.filter(run=mid, role=MessageRole.TOOL).order_by(
        "created_at"
    )
    assert refused.tool["error"]["code"] == "invalid_arguments"
    assert "not JSON" in refused.tool["error"]["message"]
    assert asked.tool["delegation"]["status"] == "succeeded"
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.tree_delegations == 2
    assert_counted_once(root, team)


def test_two_asks_with_one_call_id_each_take_their_own_budget(team, user, sent):
    agents = make_team(lead=["mid"], mid=["leaf", "tax"], leaf=[], tax=[])
    team.script("lead", delegate("mid"), text("lead done"))
    asks = tool_calls(
        ("delegate", {"target": "leaf", "task": "x"}), ("delegate", {"target": "tax", "task": "y"})
    )
    asks.same_call_ids = True  # a server that gives both calls one id
    team.script("mid", asks, text("mid done"))
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    mid = Run.objects.get(parent=root)
    assert Run.objects.filter(parent=mid).count() == 2
    root.refresh_from_db()
    assert root.tree_delegations == 3  # mid, leaf and tax: the first take is used once
    assert_counted_once(root, team)


def test_a_caller_read_before_its_expert_s_end_does_not_wait_for_that_expert(team, user):
    agents = make_team(lead=["a", "b"], a=[], b=[])
    root = start_run(user, agents["lead"])
    experts = [
        Run.objects.create(
            id=uuid.uuid4(),
            parent=root,
            root=root,
            session=root.session,
            user=user,
            agent=agents[name],
            agent_version=1,
            agent_config={"name": name, "display_name": name},
            parent_tool_call_id=f"call_{name}",
            depth=1,
            task="t",
            deadline=root.deadline,
            status=RunStatus.RUNNING,
        )
        for name in ("a", "b")
    ]
    Run.objects.filter(pk=root.pk).update(status=RunStatus.WAITING)
    with transaction.atomic():
        caller = report.delegation_caller(child=experts[0])
        assert caller.waits.expert  # b still works
    Run.objects.filter(pk=experts[1].pk).update(status=RunStatus.SUCCEEDED)
    with transaction.atomic():
        caller = report.delegation_caller(child=experts[0])
        assert not caller.waits.expert  # only a, which is ending, is left
    Run.objects.filter(pk=experts[0].pk).update(lease_token=uuid.uuid4())
    experts[0].refresh_from_db()
    with transaction.atomic():  # still its worker's: found, and locked
        assert report.delegation_caller_held(child=experts[0]).run.pk == root.pk
    Run.objects.filter(pk=experts[0].pk).update(lease_token=uuid.uuid4())  # the sweeper's now
    with transaction.atomic():  # its doomed end reads (and locks) nothing
        assert report.delegation_caller_held(child=experts[0]) is None
        assert report.delegation_caller(child=experts[0]).run.pk == root.pk  # (a report's own read)


@pytest.mark.parametrize("depth", [1, 2])
def test_a_caller_handed_over_counts_its_expert_s_call_against_the_turn_s_tokens(
    team, user, sent, settings, depth
):
    """The caller an expert's end hands over was read before that expert's ledger row: its
    reserved answering call still sees the turn's tokens spent, and offers no tools."""
    agents = make_team(lead=["mid"], mid=["leaf"], leaf=[])
    team.script("lead", delegate("mid"), text("lead done"))
    if depth == 1:
        team.script("mid", text("mid done"))
    else:
        team.script("mid", delegate("leaf"), text("mid done"))
        team.script("leaf", text("leaf done"))
    settings.TURN_MAX_TOKENS = 18 * (depth + 1)  # each call is 18: spent by the last expert's
    root = start_run(user, agents["lead"])
    run_turn(root, sent)
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED
    caller = "lead" if depth == 1 else "mid"
    asked, answering = team.requests[caller]
    assert asked.get("tools") and not answering.get("tools")
    assert budget.budget_tokens_used(root_id=root.pk) == 18 * (2 * depth + 1)  # every call
