"""Each expectation passing and failing on real turns (the openai client against the fake
server, a scripted team and judge), what cannot be judged, and the rules a case must pass."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from agents.knowledge.demo import knowledge_seed_demo
from agents.models import Agent
from delegation.evals.checks import json_subset
from delegation.evals.models import CaseStatus
from delegation.usage.models import ModelPrice
from tests.evals.conftest import make_case, make_suite, run_suite
from tests.factories import make_agent
from tests.fake_openai import Reply, Team, delegate, error, text, tool_call
from tests.usage.conftest import make_price

ANSWER = "Finance says 60. Have a nice day!"

# Expectations the scripted turn below meets…
MET: dict[str, Any] = {
    "mode": "CHAT",
    "experts": {"names": ["finance"], "match": "set"},
    "tools_called": ["calculate"],
    "tools_not_called": ["current_time"],
    "tool_arguments": [{"tool": "calculate", "arguments": {"expression": "1200*0.05"}}],
    "answer_contains": ["NICE DAY"],
    "answer_not_contains": ["sorry"],
    "answer_regex": r"\b60\b",
    "max_model_calls": 4,
    "max_latency_seconds": 60,
    "max_cost": "1.00",
    "rubric": "A friendly answer that gives the number.",
}
# …and, one per case, an expectation it misses, with what the verdict must say.
MISSED: dict[str, tuple[Any, str]] = {
    "mode": ("STRICT", ""),
    "experts": ({"names": ["finance", "hr"], "match": "set"}, "asked finance"),
    "tools_called": (["current_time"], "never called: current_time"),
    "tools_not_called": (["calculate"], "called: calculate"),
    "no_tools": (True, "called: delegate, calculate"),
    "tool_arguments": (
        [{"tool": "calculate", "arguments": {"expression": "2*2"}}],
        "no call matched: calculate",
    ),
    "answer_contains": (["bonjour"], "missing: “bonjour”"),
    "answer_not_contains": (["nice"], "found: “nice”"),
    "answer_regex": (r"^bye$", ""),
    "max_model_calls": (3, ""),
    "max_latency_seconds": (0.000001, ""),
    "max_cost": ("0", ""),
    "rubric": ("Answers in French.", "not French"),
}


def _last(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]


def judge(body: dict[str, Any]) -> Reply:
    """Passes friendly rubrics; fails the others with a reason."""
    rubric = _last(body)["content"].split("Rubric:\n", 1)[1].split("\n", 1)[0]
    verdict = (
        {"pass": True, "score": 1, "reason": "friendly and exact"}
        if "friendly" in rubric
        else {"pass": False, "score": 0, "reason": "not French"}
    )
    return text(json.dumps(verdict))


@pytest.fixture
def team(fake_openai, db) -> Team:
    """assistant → finance (calculate) → answer, on the fake server; fake-model is priced."""
    finance = make_agent("finance", provider="openai", model="fake-model", tool_keys=["calculate"])
    make_agent("hr", provider="openai", model="fake-model")
    make_agent(
        "assistant", provider="openai", model="fake-model", is_entry=True, subagents=[finance]
    )
    make_price("fake-model", input="1", output="2")
    team = Team(fake_openai)
    team.always["assistant"] = lambda body: (
        text(ANSWER) if _last(body)["role"] == "tool" else delegate("finance", "5% of 1200?")
    )
    team.always["finance"] = lambda body: (
        text("It is 60.")
        if _last(body)["role"] == "tool"
        else tool_call("calculate", {"expression": "1200*0.05"})
    )
    team.always["eval-judge"] = judge
    return team


@pytest.mark.django_db(transaction=True)
def test_a_turn_meeting_every_expectation_passes_each_of_them(team):
    suite = make_suite(_entry())
    make_case(suite, "What is 5% of 1200?", expect=MET)
    run = run_suite(suite)
    result = run.results.get()
    assert {o["key"]: o["status"] for o in result.expectations} == {k: "pass" for k in MET}
    assert result.status == CaseStatus.PASSED and run.succeeded
    assert result.cost is not None and Decimal(0) < result.cost < Decimal("1.00")
    assert result.model_calls == 4 and result.evidence["experts"] == ["finance"]
    judged = team.requests["eval-judge"][0]
    assert ANSWER in judged["messages"][-1]["content"] and judged["model"] == "gpt-4o-mini"


def _entry() -> Agent:
    return Agent.objects.get(name="assistant")


@pytest.mark.django_db(transaction=True)
def test_each_expectation_fails_a_turn_that_misses_it_and_says_why(team):
    suite = make_suite(_entry(), pass_threshold=50)
    for key, (expected, _) in MISSED.items():
        make_case(suite, "What is 5% of 1200?", name=key, expect={key: expected})
    run = run_suite(suite)
    assert run.passed == 0 and run.failed == len(MISSED) and run.succeeded is False
    for result in run.results.all():
        (outcome,) = result.expectations
        assert (result.status, outcome["key"], outcome["status"]) == ("failed", result.name, "fail")
        assert MISSED[result.name][1] in outcome["detail"], result.name


@pytest.mark.django_db(transaction=True)
def test_experts_in_order_and_at_least(team):
    suite = make_suite(_entry(), pass_threshold=0)
    for name, experts in {
        "ordered ok": {"names": ["finance"], "match": "ordered"},
        "includes ok": {"names": ["finance"], "match": "includes"},
        "includes missing": {"names": ["finance", "hr"], "match": "includes"},
        "none asked": {"names": [], "match": "set"},
    }.items():
        make_case(suite, "What is 5% of 1200?", name=name, expect={"experts": experts})
    statuses = dict(run_suite(suite).results.values_list("name", "status"))
    assert statuses == {
        "ordered ok": "passed",
        "includes ok": "passed",
        "includes missing": "failed",
        "none asked": "failed",
    }


@pytest.mark.django_db(transaction=True)
def test_an_unpriced_model_leaves_max_cost_unjudged_not_passed(team, settings):
    ModelPrice.objects.all().delete()
    suite = make_suite(_entry())
    make_case(suite, "What is 5% of 1200?", expect={"max_cost": "1.00", "answer_regex": "60"})
    result = run_suite(suite).results.get()
    cost = next(o for o in result.expectations if o["key"] == "max_cost")
    assert cost["status"] == "unavailable" and "No price for openai/fake-model" in cost["detail"]
    assert result.cost is None and result.status == CaseStatus.PASSED  # listed, not counted


@pytest.mark.django_db(transaction=True)
def test_without_a_judge_model_a_rubric_is_not_judged(entry_agent, settings):
    settings.OPENAI_API_KEY = settings.OPENAI_BASE_URL = ""
    settings.EVALS_JUDGE_API_KEY = settings.EVALS_JUDGE_BASE_URL = ""
    suite = make_suite(entry_agent)
    make_case(suite, "what is 6*7?", expect={"rubric": "Gives 42.", "answer_contains": ["42"]})
    result = run_suite(suite).results.get()
    rubric = next(o for o in result.expectations if o["key"] == "rubric")
    assert rubric["status"] == "unavailable" and "No judge model is configured" in rubric["detail"]
    assert result.status == CaseStatus.PASSED


@pytest.mark.parametrize(
    "reply",
    [text("I think it is fine."), error(500, "judge down")],
    ids=["no verdict", "server error"],
)
@pytest.mark.django_db(transaction=True)
def test_a_broken_judge_makes_the_case_an_error_not_a_pass(team, reply, settings):
    settings.EVALS_JUDGE_MODEL = "judge-model"
    team.always["eval-judge"] = lambda body: reply
    suite = make_suite(_entry())
    make_case(suite, "What is 5% of 1200?", expect={"rubric": "A friendly answer."})
    run = run_suite(suite)
    result = run.results.get()
    assert result.status == CaseStatus.ERROR and not run.succeeded
    assert result.expectations[0]["status"] == "error"
    assert "judge (judge-model)" in result.expectations[0]["detail"]


@pytest.mark.django_db(transaction=True)
def test_the_suites_judge_model_grades_its_rubrics(team):
    suite = make_suite(_entry(), judge_model="strict-judge")
    make_case(suite, "What is 5% of 1200?", expect={"rubric": "A friendly answer."})
    assert run_suite(suite).succeeded
    assert [r["model"] for r in team.requests["eval-judge"]] == ["strict-judge"]


@pytest.mark.django_db(transaction=True)
def test_a_failed_turn_is_an_error_whatever_it_expected(team):
    team.always["assistant"] = lambda body: error(400, "bad request")
    suite = make_suite(_entry())
    make_case(suite, "What is 5% of 1200?", expect={"answer_not_contains": ["60"]})
    result = run_suite(suite).results.get()
    assert result.status == CaseStatus.ERROR and "The turn ended failed" in result.error


@pytest.mark.django_db(transaction=True)
def test_cited_documents_pass_and_fail_on_the_experts_sources(fake_openai, db):
    finance = make_agent("finance", provider="openai", model="fake-model")
    entry = make_agent("assistant", provider="openai", model="fake-model", subagents=[finance])
    knowledge_seed_demo()
    team = Team(fake_openai)
    team.always["assistant"] = lambda body: (
        text("The newest finance report is 2026年第三季財務報告 [1].")
        if _last(body)["role"] == "tool"
        else delegate("finance", "newest document?")
    )
    team.always["finance"] = lambda body: (
        text("最新的是「2026年第三季財務報告」[1]。")
        if _last(body)["role"] == "tool"
        else tool_call("kb_documents", {"sort": "newest", "limit": 3})
    )
    suite = make_suite(entry, pass_threshold=0)
    cited, readers = "2026年第三季財務報告", list(Group.objects.filter(name="finance"))
    for name, title in (("cited", cited), ("not", "人資假勤規定")):
        expect = {"cited_documents": [title]}
        make_case(suite, "財務部最新的檔案", name=name, user_groups=readers, expect=expect)
    results = {r.name: r for r in run_suite(suite).results.all()}
    assert results["cited"].status == CaseStatus.PASSED
    assert results["cited"].evidence["citations"][0]["title"] == cited
    assert results["not"].status == CaseStatus.FAILED
    assert "not cited: “人資假勤規定”" in results["not"].expectations[0]["detail"]


@pytest.mark.parametrize(
    ("expected", "actual", "holds"),
    [
        ({"a": 1}, {"a": 1, "b": 2}, True),
        ({"a": {"b": [1, {"c": "x"}]}}, {"a": {"b": [1, {"c": "x", "d": 0}], "e": 1}}, True),
        ({"a": [1]}, {"a": [1, 2]}, False),
        ({"a": 1}, {"a": True}, False),
        ({"a": 1}, {"b": 1}, False),
        ({"a": "明天"}, {"a": "明天 "}, False),
        ({}, "not an object", False),
    ],
)
def test_tool_arguments_match_as_a_json_subset(expected, actual, holds):
    assert json_subset(expected, actual) is holds


@pytest.mark.parametrize(
    ("data", "field", "words"),
    [
        ({"expect": {"answer_contain": ["x"]}}, "expect", "Additional properties"),
        ({"expect": {"mode": "LOUD"}}, "mode", "is not one of"),
        ({"expect": {"answer_regex": "(unclosed"}}, "answer_regex", "Not a regular expression"),
        ({"expect": {"tools_called": ["teleport"]}}, "tools_called", "No tool is registered"),
        ({"expect": {"experts": {"names": ["ghost"]}}}, "experts", "No agent is named ghost"),
        ({"expect": {"experts": {"names": [], "match": "some"}}}, "experts", "is not one of"),
        ({"expect": {"max_cost": "-1"}}, "max_cost", "0 or more"),
        ({"expect": {"max_cost": "lots"}}, "max_cost", "0 or more"),
        ({"expect": {"max_model_calls": 0}}, "max_model_calls", "less than the minimum"),
        ({"expect": {"no_tools": False}}, "no_tools", "was expected"),
        ({"expect": ["not", "an", "object"]}, "expect", "JSON object"),
        ({"prior_turns": [{"user": "hi"}]}, "prior_turns", "Earlier turns are a list"),
        ({"flags": {"force_strict": True, "force_guide": True}}, "flags", "exclude each other"),
        ({"flags": {"debug": True}}, "flags", "Flags are an object"),
        ({"user_permissions": ["nope.nothing"]}, "user_permissions", "No such permission"),
        ({"user_timezone": "Mars/Olympus"}, "user_timezone", "not an IANA timezone"),
        ({"message": "   "}, "message", "empty"),
        ({"message": "a\x00b"}, "message", "NUL"),
    ],
)
@pytest.mark.django_db
def test_a_case_that_breaks_a_rule_is_refused_naming_the_field(entry_agent, data, field, words):
    suite = make_suite(entry_agent)
    with pytest.raises(ValidationError) as refused:
        make_case(suite, data.pop("message", "hello"), **data)
    assert any(words in m for m in refused.value.message_dict[field]), refused.value.message_dict


@pytest.mark.django_db
def test_a_message_over_the_chat_limit_is_refused(entry_agent, settings):
    settings.CHAT_MAX_MESSAGE_CHARS = 10
    with pytest.raises(ValidationError) as refused:
        make_case(make_suite(entry_agent), "x" * 11)
    assert "CHAT_MAX_MESSAGE_CHARS" in refused.value.message_dict["message"][0]
