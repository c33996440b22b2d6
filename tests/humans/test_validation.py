"""Validated expert answers: valid, invalid through each fallback step, the validator model
judging or failing (trusted, recorded), and the rules on their own."""

from __future__ import annotations

import json
import uuid

import pytest

from chat.models import ChatMessage
from delegation.humans.models import Activity, ActivityKind, Review, Verdict
from delegation.humans.validation import rules_issue
from delegation.models import Run, RunStatus
from tests.fake_openai import delegate, error, text, tool_calls
from tests.humans.conftest import agent
from tests.humans.helpers import start, tool_results

pytestmark = pytest.mark.django_db(transaction=True)
GOOD = "The Q3 budget is 60,000 dollars."


@pytest.fixture(autouse=True)
def sync_tasks(settings):
    settings.TASKS_RUN_SYNC = True


def team_of(*experts, **checked):
    """boss (entry) may ask each expert; `checked` sets the first expert's validation."""
    made = [agent(name, **(checked if i == 0 else {})) for i, name in enumerate(experts)]
    return agent("boss", is_entry=True, subagents=tuple(made))


def expert_runs(name: str) -> list[Run]:
    return list(Run.objects.filter(agent__name=name).order_by("created_at"))


def test_a_valid_answer_goes_through_marked_high_confidence(user, team):
    team_of("fin", validate_answers="rules")
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", text(GOOD))
    root = start(user)
    (fin,) = expert_runs("fin")
    assert fin.validation["valid"] and fin.validation["outcome"] == "accepted"
    (result,) = tool_results(team.requests["boss"][1])
    assert result == {"ok": True, "result": {"agent": "Fin", "answer": GOOD, "confidence": "high"}}
    root.refresh_from_db()
    assert (root.confidence, root.needs_review) == ("high", False)
    assert root.tree_checks == 1  # what tells the turn's rating to read its experts' checks
    assert not Review.objects.exists()


def test_an_invalid_answer_is_retried_once_with_the_issue_appended(user, team):
    team_of("fin", validate_answers="rules", fallback_chain=["retry", "low_confidence"])
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", text(""), text(GOOD))
    root = start(user)
    first, second = expert_runs("fin")
    assert first.validation["outcome"] == "retry"
    assert first.validation["issue"] == "The answer is empty."
    assert second.validation["outcome"] == "accepted"
    assert second.parent_tool_call_id == first.parent_tool_call_id
    asked = team.requests["fin"][1]["messages"][-1]["content"]
    assert asked.startswith("Q3 budget?") and "not accepted: The answer is empty." in asked
    (result,) = tool_results(team.requests["boss"][1])
    assert result["result"]["answer"] == GOOD
    root.refresh_from_db()
    assert root.status == RunStatus.SUCCEEDED and root.confidence == "high"
    messages = ChatMessage.objects.filter(run=root, role="tool").order_by("created_at")
    assert [m.tool["delegation"]["status"] for m in messages] == ["invalid", "succeeded"]
    assert messages[1].tool["delegation"]["fallback"] == "retry"
    assert Verdict.objects.count() == 2
    assert Activity.objects.filter(kind=ActivityKind.FALLBACK).count() == 1


def test_an_invalid_answer_goes_to_the_next_best_expert(user, team):
    acct = agent("acct", tags=["budget", "accounting"])
    fin = agent("fin", validate_answers="rules", fallback_chain=["next_expert", "unanswered"])
    agent("boss", is_entry=True, subagents=(fin, acct))
    team.script("boss", delegate("fin", "What is the budget for Q3?"), text("Boss: 60k."))
    team.script("fin", text(""))
    team.script("acct", text(GOOD))
    start(user)
    (fin_run,) = expert_runs("fin")
    (acct_run,) = expert_runs("acct")
    assert fin_run.validation["outcome"] == "next_expert"
    assert acct_run.task == "What is the budget for Q3?"
    assert "second opinion" in acct_run.routing_reason
    (result,) = tool_results(team.requests["boss"][1])
    assert result["result"] == {"agent": "Acct", "answer": GOOD}  # acct validates nothing


def test_with_no_next_expert_the_chain_goes_on_to_could_not_answer(user, team):
    agent("acct", tags=["accounting"])
    fin = agent(
        "fin",
        validate_answers="rules",
        fallback_chain=["next_expert", "unanswered"],
        human_group="Finance",
    )
    agent("boss", is_entry=True, subagents=(fin,))
    team.script("boss", delegate("fin", "Tell me a joke"), text("Boss: sorry."))
    team.script("fin", text(""))
    root = start(user)
    (fin_run,) = expert_runs("fin")
    assert fin_run.validation["outcome"] == "unanswered"
    (result,) = tool_results(team.requests["boss"][1])
    assert result["ok"] is False and result["error"]["code"] == "answer_invalid"
    assert "could not answer this reliably (The answer is empty.)" in result["error"]["message"]
    assert "the “Finance” team" in result["error"]["message"]
    root.refresh_from_db()
    assert (root.confidence, root.needs_review) == ("low", True)
    assert Review.objects.get().agent_name == "fin"


def test_low_confidence_passes_the_answer_on_marked_and_queues_a_review(user, team):
    team_of("fin", validate_answers="rules", answer_min_chars=40, fallback_chain=["low_confidence"])
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: probably 60k."))
    team.script("fin", text("60k."))
    root = start(user)
    (result,) = tool_results(team.requests["boss"][1])
    assert result["ok"] and result["result"]["confidence"] == "low"
    assert result["result"]["validation"] == {
        "valid": False,
        "issue": "The answer is 4 characters; at least 40 are expected.",
    }
    root.refresh_from_db()
    assert (root.confidence, root.needs_review) == ("low", True)
    review = Review.objects.get()
    assert (review.run_id, review.agent_name, review.status) == (root.id, "fin", "pending")
    assert review.answer == "Boss: probably 60k." and review.question == "please help"
    assert "fin: The answer is 4 characters" in review.issue
    note = ChatMessage.objects.get(id=uuid.uuid5(root.id, "quality-note"))
    assert note.agent["display_name"] == "Quality check" and "Low confidence" in note.content


def test_an_expert_checked_while_its_caller_ran_a_tool_still_rates_the_turn(user, team):
    """A step that asks an expert and runs a tool: the expert (inline here) is answered,
    checked and ended before its caller looks whether to wait; the caller goes on, and its
    answer is still rated from that check (the turn's counters are read again then)."""
    fin = agent(
        "fin", validate_answers="rules", answer_min_chars=40, fallback_chain=["low_confidence"]
    )
    agent("boss", is_entry=True, subagents=(fin,), tool_keys=["calculate"])
    team.script(
        "boss",
        tool_calls(
            ("calculate", {"expression": "2+2"}), ("delegate", {"target": "fin", "task": "Q3?"})
        ),
        text("Boss: probably 60k."),
    )
    team.script("fin", text("60k."))
    root = start(user)
    assert root.status == RunStatus.SUCCEEDED
    assert (root.confidence, root.needs_review) == ("low", True)
    assert Review.objects.get().agent_name == "fin"


@pytest.mark.parametrize(
    "reply", [error(500, "validator down"), text("no JSON here"), text('{"valid": "yes"}')]
)
def test_a_failing_validator_means_trust_and_is_recorded(user, team, reply):
    team_of("fin", validate_answers="model", validator_model="fast-judge")
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", text(GOOD))
    team.script("the answer validator", reply)
    start(user)
    verdict = Verdict.objects.get()
    assert verdict.valid and verdict.validator_failed and verdict.issue
    assert verdict.outcome == "accepted"
    (request,) = team.requests["the answer validator"]
    assert request["model"] == "fast-judge"
    (result,) = tool_results(team.requests["boss"][1])
    assert result["result"]["answer"] == GOOD


def test_the_validator_model_judges_the_answer_against_the_task(user, team):
    team_of("fin", validate_answers="model", fallback_chain=["retry", "low_confidence"])
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", text("Budgets matter a lot."), text(GOOD))
    verdicts = [
        {"valid": False, "issue": "It gives no number.", "confidence": 0.9},
        {"valid": True, "issue": "", "confidence": 0.95},
    ]
    team.script("the answer validator", *(text(json.dumps(v)) for v in verdicts))
    root = start(user)
    judged = team.requests["the answer validator"][0]["messages"][-1]["content"]
    assert "Q3 budget?" in judged and "Budgets matter a lot." in judged
    first, second = expert_runs("fin")
    assert (first.validation["issue"], first.validation["outcome"]) == (
        "It gives no number.",
        "retry",
    )
    assert second.validation["confidence"] == 0.95
    root.refresh_from_db()
    assert root.confidence == "high"


def test_a_valid_but_unsure_verdict_marks_the_answer_low_confidence(user, team, settings):
    team_of("fin", validate_answers="model")
    team.script("boss", delegate("fin", "Q3 budget?"), text("Boss: 60k."))
    team.script("fin", text(GOOD))
    team.script("the answer validator", text('{"valid": true, "issue": "", "confidence": 0.3}'))
    root = start(user)
    (result,) = tool_results(team.requests["boss"][1])
    assert result["result"]["confidence"] == "low"
    root.refresh_from_db()
    assert root.needs_review


def _run(answer_config: dict, references: list, citations: list, **config) -> Run:
    return Run(
        agent_config={"name": "x", "answer_from_knowledge_only": False, "tool_keys": [], **config},
        references=references,
        citations=citations,
        path=["x"],
    )


PASSAGE = {"document_id": 1, "chunk_id": 3, "ref": 1, "title": "Policy", "quote": "…"}


@pytest.mark.parametrize(
    ("answer", "references", "citations", "config", "issue"),
    [
        ("   ", [], [], {}, "The answer is empty."),
        ("(The model returned an empty answer.)", [], [], {}, "The answer is empty."),
        ("Sorry, I don't know.", [PASSAGE], [], {}, "refuses or says it does not know"),
        ("Sorry, I don't know.", [], [], {}, ""),  # nothing was found: an honest refusal
        (
            "The policy says 30 days.",
            [PASSAGE],
            [],
            {"answer_from_knowledge_only": True},
            "must cite its knowledge",
        ),
        (
            "The policy says 30 days [1].",
            [PASSAGE],
            [PASSAGE],
            {"answer_from_knowledge_only": True},
            "",
        ),
        ("short", [], [], {"answer_min_chars": 6}, "at least 6"),
        ("longer", [], [], {"answer_min_chars": 6}, ""),
        ("x" * 11, [], [], {"answer_max_chars": 10}, "at most 10"),
        ("x" * 10, [], [], {"answer_max_chars": 10}, ""),
    ],
)
def test_the_rules(answer, references, citations, config, issue):
    found = rules_issue(run=_run({}, references, citations, **config), answer=answer)
    assert (issue in found) if issue else found == ""
