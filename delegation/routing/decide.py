"""The routing decision of a turn: a request for a person first, then overrides, then intent
rules, then the router model for what no rule decides, then the keyword/tag fallback when the
router fails. Never raises."""

from __future__ import annotations

import json
import logging
import re
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.utils.translation import gettext

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.models import Agent
from agents.providers import provider_for
from agents.providers.base import ModelRequest, Usage, whole_answer
from agents.registry import tool_claiming, tools_for
from delegation.models import Run
from delegation.routing.learning import (
    Figure,
    figure_of,
    learning_changed,
    learning_figures,
    learning_on,
    learning_order,
    learning_record,
    prior_lines,
)
from delegation.routing.models import (
    NO_INTENT,
    Learning,
    Mode,
    RoutingPolicy,
    RoutingRule,
    RuleKind,
)
from delegation.routing.rules import RuleMatch, fold, person_asked, rule_match
from delegation.tree.budget import budget_take_model_call
from delegation.usage.budgets import BudgetExceeded
from delegation.usage.services import CallHold, usage_charge, usage_hold

logger = logging.getLogger(__name__)

_router_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="router")
ASK_HUMAN = "ask_human"  # the registry tool that puts a question in the staff inbox
HUMAN_REQUEST = "human-request"
_JSON = re.compile(r"\{.*\}", re.S)


@dataclass
class RoutingDecision:
    """What routing decided for a turn, and why (recorded on the root run, shown to staff)."""

    mode: str
    reason: str
    matched_rule: str | None = None
    matched_keywords: list[str] = field(default_factory=list)
    target: str | None = None  # the expert to ask first (None: the entry agent decides)
    tools: list[str] = field(default_factory=list)  # the tools the answering agent holds
    fallback_used: bool = False
    router_latency_ms: float | None = None
    skipped: list[str] = field(default_factory=list)  # rules passed over, with why
    policy: str | None = None  # the policy that decided (None: no policy, no mode rules)
    # The user asked for a person: the turn starts by asking staff (ask_human), whatever the
    # topic; no expert is asked first.
    ask_human: bool = False
    intent: str = NO_INTENT  # the intent rule that decided ("none": none did)
    # The policy's learning and the figures it used (None: learning is off).
    learning: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """The JSON stored on the run and sent as `routing.decided`."""
        return asdict(self)


@dataclass(frozen=True)
class RoutingInput:
    """What a decision is made from."""

    text: str
    policy: RoutingPolicy | None
    entry: dict[str, Any]  # the entry agent's pinned config
    targets: list[Agent]  # experts the entry agent may ask for this user now
    force_strict: bool = False
    force_guide: bool = False
    # The turn's entry run: the router's model call is taken from its budget and charged to its
    # ledger like any call (None: a dry run, as the admin's "try a message" makes).
    run: Run | None = None
    # Who asks (default: the run's user): the tools listed are those this user may use.
    user: Any = None


def routing_decide(given: RoutingInput) -> RoutingDecision:
    """Decide the turn's mode and, where a rule or the router says so, the expert to ask."""
    policy = given.policy
    decision = RoutingDecision(
        mode=policy.default_mode if policy else Mode.CHAT,
        reason=gettext("No routing policy: the entry agent decides whom to ask."),
    )
    if given.force_strict or given.force_guide:
        decision.mode = Mode.STRICT if given.force_strict else Mode.GUIDE
        decision.matched_rule = "force_strict" if given.force_strict else "force_guide"
        decision.reason = gettext("The request asked for %(mode)s (%(rule)s).") % {
            "mode": decision.mode,
            "rule": decision.matched_rule,
        }
    if policy is not None:
        decision.policy = policy.name
    if _person_first(decision, given) or _claimed_by_tool(decision, given):
        return _with_tools(decision, given)
    if policy is None:
        return _with_tools(decision, given)
    rules = list(policy.rules.filter(enabled=True).select_related("target"))
    forced = decision.matched_rule is not None
    if not forced:
        _apply_first(decision, given, [r for r in rules if r.kind == RuleKind.OVERRIDE])
        forced = decision.matched_rule is not None
    intents = [r for r in rules if r.kind == RuleKind.INTENT]
    decided = _apply_first(decision, given, intents, keep_mode=forced)
    if decided is not None:
        decision.intent = decided.name
    figures = None
    if policy.learning != Learning.OFF and given.targets:  # (one indexed read; none when off)
        figures = learning_figures(entry=given.entry["name"])
        decision.learning = learning_record(
            policy=policy, figures=figures, intent=decision.intent, targets=given.targets
        )
    learned = figures if learning_on(policy) else None
    if not decided and given.targets and policy.router_enabled:  # what no rule decides
        _route_by_model(decision, given, learned)
    if figures is not None:
        _learn(decision, given, figures)
    return _with_tools(decision, given)


def _learn(decision: RoutingDecision, given: RoutingInput, figures: list[Figure]) -> None:
    """With learning on, an expert below the threshold for the intent gives way to an
    alternative the message also mentions (recorded with the figures)."""
    policy, record = given.policy, decision.learning
    assert policy is not None and record is not None
    chosen = next((a for a in given.targets if a.name == decision.target), None)
    figure = figure_of(figures, decision.target or "", decision.intent)
    if not learning_on(policy) or chosen is None or figure is None or not figure.below(policy):
        return
    others = [a for a, _word in _mentioned(given) if a.name != chosen.name]
    ordered = learning_order(others, figures, decision.intent, policy)
    better = [a for a in ordered if not _below(figures, a, decision.intent, policy)]
    if better:
        decision.target = better[0].name
        reason = learning_changed(record, before=chosen, after=better[0], figure=figure)
        decision.reason = f"{decision.reason} {reason}"


def _below(figures: list[Figure], agent: Agent, intent: str, policy: RoutingPolicy) -> bool:
    figure = figure_of(figures, agent.name, intent)
    return figure is not None and figure.below(policy)


def _person_first(decision: RoutingDecision, given: RoutingInput) -> bool:
    """An explicit request for a person ("轉人工", "talk to a person") wins over every rule and
    department word: the turn asks staff, when the entry agent can (it holds ask_human)."""
    words = person_asked(given.text)
    if words is None:
        return False
    if ASK_HUMAN not in answering_tools(given, None):
        decision.skipped.append(
            gettext(
                "%(rule)s: the user asked for a person (“%(words)s”), but the entry agent has "
                "no ask_human tool"
            )
            % {"rule": HUMAN_REQUEST, "words": words}
        )
        return False
    decision.ask_human = True
    decision.matched_rule = (
        f"{decision.matched_rule} + {HUMAN_REQUEST}" if decision.matched_rule else HUMAN_REQUEST
    )
    decision.matched_keywords = [words]
    decision.reason = gettext(
        "The user asked for a person (“%(words)s”): staff are asked first, whatever the topic."
    ) % {"words": words}
    return True


def _claimed_by_tool(decision: RoutingDecision, given: RoutingInput) -> bool:
    """Words a tool of the entry agent claims (a standing order: "每週一早上請財務 Agent 生成
    週報告") stay with the entry agent, whatever department they name: no expert is asked
    first (registry.tool_claiming)."""
    claimed = tool_claiming(given.text, set(given.entry["tool_keys"]))  # no query unless one
    if claimed is None or claimed[0] not in answering_tools(given, None):  # the user may use it
        return False
    decision.matched_rule = decision.matched_rule or f"tool:{claimed[0]}"
    decision.reason = gettext(
        "The words ask for the entry agent's own tool %(tool)s: no expert is asked first."
    ) % {"tool": claimed[0]}
    return True


def _apply_first(
    decision: RoutingDecision,
    given: RoutingInput,
    rules: list[RoutingRule],
    keep_mode: bool = False,
) -> RoutingRule | None:
    """The first rule that matches and can be followed decides; a rule whose expert this user
    cannot ask now is passed over (recorded) and the next applies."""
    usable = {a.name for a in given.targets}
    for rule in rules:
        match = rule_match(
            given.text,
            keywords=rule.keywords,
            pattern=rule.pattern,
            max_chars=rule.max_chars,
            numbers=rule.strict_on_numbers,
        )
        if not match.matched:
            continue
        if rule.target_id and (rule.target is None or rule.target.name not in usable):
            name = rule.target.display_name if rule.target else gettext("its expert")
            decision.skipped.append(
                gettext("%(rule)s: %(expert)s is disabled or not available to this user")
                % {"rule": rule.name, "expert": name}
            )
            continue
        mode = Mode.STRICT if match.numbers_in_sentence else rule.mode
        if not keep_mode:
            decision.mode = mode
        decision.reason = rule.reason or _rule_reason(rule, match)
        if keep_mode and decision.matched_rule:
            decision.reason = gettext("%(rule)s sets %(mode)s; %(reason)s") % {
                "rule": decision.matched_rule,
                "mode": decision.mode,
                "reason": decision.reason,
            }
        decision.matched_rule = (
            f"{decision.matched_rule} + {rule.name}"
            if keep_mode and decision.matched_rule
            else rule.name
        )
        decision.matched_keywords = [*decision.matched_keywords, *match.keywords]
        if rule.target is not None:
            decision.target = rule.target.name
        return rule
    return None


def _rule_reason(rule: RoutingRule, match: RuleMatch) -> str:
    """ "Rule “finance” matched: budget, 預算." (in the active language), for a rule with no
    reason of its own."""
    words = ", ".join(match.keywords) or rule.pattern
    if not words:
        words = gettext("≤ %(count)s characters") % {"count": rule.max_chars}
    if match.numbers_in_sentence:
        return gettext(
            "Rule “%(rule)s” matched: %(words)s (a number in the same sentence: STRICT)."
        ) % {
            "rule": rule.name,
            "words": words,
        }
    return gettext("Rule “%(rule)s” matched: %(words)s.") % {"rule": rule.name, "words": words}


def _route_by_model(
    decision: RoutingDecision, given: RoutingInput, figures: list[Figure] | None
) -> None:
    """Ask the router model to pick self or an expert (with the figures as priors when learning
    is on); on any failure, the tag fallback (which breaks ties with them). The call counts
    against the turn's model calls and money like any other, and is ledgered."""
    entry = given.entry
    provider_name = (given.policy.router_provider if given.policy else "") or entry["provider"]
    provider = provider_for(provider_name)
    if provider.name == "offline":  # no model to ask: the tags decide, as the offline model does
        because = gettext("keyword/tag routing (offline model)")
        _route_by_tags(decision, given, because=because, figures=figures)
        return
    request = _router_request(given, figures)
    started = time.monotonic()
    try:
        hold = _router_cleared(given, provider.name, request)
    except BudgetSpent as exc:
        decision.fallback_used = True
        because = gettext("no router (%(error)s): fallback") % {"error": exc}
        _route_by_tags(decision, given, because=because, figures=figures)
        return
    text, usage = "", Usage()
    try:
        future = _router_pool.submit(whole_answer, provider, request)
        text, usage = future.result(timeout=given.policy.router_timeout)
        target, reason = _router_choice(text, given)
    except (FutureTimeout, Exception) as exc:  # any failure: the rules decide
        decision.router_latency_ms = round((time.monotonic() - started) * 1000, 1)
        logger.warning("router failed (%s): keyword/tag fallback", type(exc).__name__)
        decision.fallback_used = True
        _route_by_tags(
            decision,
            given,
            because=gettext("router failed (%(error)s): fallback") % {"error": _describe(exc)},
            figures=figures,
        )
        return
    finally:
        if hold is not None and given.run is not None:  # a call made is charged (at its
            usage_charge(run=given.run, hold=hold, usage=usage, text=text)  # estimate if silent)
    decision.router_latency_ms = round((time.monotonic() - started) * 1000, 1)
    decision.target = None if target == "self" else target
    _add_reason(decision, reason or gettext("The router model chose without a stated reason."))


class BudgetSpent(Exception):
    """The turn cannot pay for the router's call: its model calls or a money budget."""


def _router_cleared(given: RoutingInput, provider: str, request: ModelRequest) -> CallHold | None:
    """Take the router's call from the turn's model calls and hold its price on the money
    budgets (BudgetSpent when either is spent); None for a dry run (no turn to charge)."""
    run = given.run
    if run is None:
        return None
    if budget_take_model_call(root=run) is None:  # (routing is the entry run's: the root)
        raise BudgetSpent("the turn has no model call left")
    try:
        return usage_hold(run=run, provider=provider, request=request)
    except BudgetExceeded as exc:
        raise BudgetSpent(exc.code) from None


def _router_request(given: RoutingInput, figures: list[Figure] | None) -> ModelRequest:
    """The router model's request: the experts, how they did lately (learning on), and the
    user's message."""
    entry, policy = given.entry, given.policy
    lines = [
        f"- {a.name} ({a.display_name}): {a.description or '—'}"
        + (f" Tags: {', '.join(a.tags)}." if a.tags else "")
        for a in given.targets
    ]
    priors = prior_lines(figures, given.targets) if figures else []
    if priors:
        lines += [
            "How each expert's answers went lately (share judged good, per kind of question; "
            "prefer experts that do well):",
            *priors,
        ]
    return ModelRequest(
        model=(policy.router_model if policy else "") or entry["model"] or settings.OPENAI_MODEL,
        messages=[
            {
                "role": "system",
                "content": "You are the router.\n"
                'Route the user\'s message to ONE expert, or to "self" when the '
                "assistant should answer itself. Experts:\n" + "\n".join(lines) + "\nAnswer "
                'with JSON only: {"target": "<expert name or self>", "reason": "<one sentence>"}',
            },
            {"role": "user", "content": given.text[:4000]},
        ],
        temperature=0,
        max_tokens=200,
        base_url=entry.get("base_url", ""),
        api_key_env=entry.get("api_key_env", ""),
    )


def _router_choice(answer: str, given: RoutingInput) -> tuple[str, str]:
    """The router model's choice as (target or "self", reason); ValueError on garbage."""
    found = _JSON.search(answer)
    if not found:
        raise ValueError("the router's answer is not JSON")
    choice = json.loads(found.group(0))
    target = choice.get("target") if isinstance(choice, dict) else None
    names = {a.name for a in given.targets}
    if target != "self" and target not in names:
        raise ValueError(f"the router chose an unknown target {target!r}")
    reason = choice.get("reason") if isinstance(choice.get("reason"), str) else ""
    return target, reason[:300]


def _route_by_tags(
    decision: RoutingDecision,
    given: RoutingInput,
    *,
    because: str,
    figures: list[Figure] | None = None,
) -> None:
    """The first expert whose name or a tag the message mentions (with learning on, the one
    with the better figures among them, those below the threshold last); else the entry
    agent."""
    mentioned = _mentioned(given)
    if mentioned:
        words = dict((a.name, w) for a, w in reversed(mentioned))
        agents = [a for a, _w in mentioned]
        if figures is not None and given.policy is not None:
            agents = learning_order(agents, figures, decision.intent, given.policy)
        agent, word = agents[0], words[agents[0].name]
        decision.target = agent.name
        _add_reason(
            decision,
            gettext("%(because)s: the message mentions “%(word)s” (%(expert)s).")
            % {"because": because, "word": word, "expert": agent.display_name},
        )
        decision.matched_keywords = [*decision.matched_keywords, word]
        if agents[0] is not mentioned[0][0] and decision.learning is not None:
            changed = learning_changed(decision.learning, before=None, after=agent, figure=None)
            _add_reason(decision, changed)
        return
    _add_reason(
        decision,
        gettext("%(because)s: no expert's tags match; the entry agent answers.")
        % {"because": because},
    )


def _mentioned(given: RoutingInput) -> list[tuple[Agent, str]]:
    """The experts whose name or a tag the message mentions (each with the first such word),
    in the order they are offered."""
    folded = fold(given.text)
    found = []
    for agent in given.targets:
        word = next((w for w in [agent.name, *agent.tags] if w and fold(w) in folded), None)
        if word is not None:
            found.append((agent, word))
    return found


def _add_reason(decision: RoutingDecision, reason: str) -> None:
    """The router's reason, after an override's when one set the mode."""
    decision.reason = f"{decision.reason} {reason}" if decision.matched_rule else reason


def _with_tools(decision: RoutingDecision, given: RoutingInput) -> RoutingDecision:
    """The decision with the tools the answering agent will hold, as its run gets them: its
    keys and its knowledge tools ∩ the registry ∩ what the user may use."""
    decision.tools = answering_tools(given, decision.target)
    return decision


def answering_tools(given: RoutingInput, target: str | None) -> list[str]:
    """The registry tools of the agent that answers (the expert `target`, else the entry
    agent) for the asking user; the `delegate` tool is not listed."""
    answering = next((a for a in given.targets if a.name == target), None)
    if answering is None:
        keys = list(given.entry["tool_keys"])  # pinned: its knowledge tools are in it already
    else:
        keys = [*answering.tool_keys]
        keys += [k for k in knowledge_tool_keys_for(answering) if k not in keys]
    user = given.user if given.user is not None else getattr(given.run, "user", None)
    if user is None:
        return keys
    return [t.key for t in tools_for(keys, user)]


def _describe(exc: BaseException) -> str:
    return "timeout" if isinstance(exc, FutureTimeout) else f"{type(exc).__name__}: {exc}"[:120]
