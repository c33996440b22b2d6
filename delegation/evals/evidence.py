"""The evidence of one finished eval turn: its tree, tool calls, experts, answer, citations,
routing, latency, tokens and cost (from the usage ledger), as plain JSON kept with the result."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from chat.models import ChatMessage, MessageRole
from delegation.models import Run
from delegation.selectors import run_tree
from delegation.tree.budget import budget_tokens_used
from delegation.usage.models import UsageRecord
from delegation.usage.money import money_text
from delegation.usage.selectors import turn_cost

TEXT_CHARS = 2000  # answers kept per run
RESULT_CHARS = 1500  # tool results kept per call, as JSON text


def turn_evidence(*, root: Run) -> dict[str, Any]:
    """Everything the expectations read, and what admins see to tell why a case failed."""
    runs = run_tree(run=root)
    by_creation = sorted(runs, key=lambda r: r.created_at)
    calls = (
        ChatMessage.objects.filter(run_id__in=[r.pk for r in runs], role=MessageRole.TOOL)
        .order_by("created_at", "id")
        .values("agent", "tool")
    )
    latency = (
        int((root.finished_at - root.created_at).total_seconds() * 1000)
        if root.finished_at
        else None
    )
    cost, note = _cost(root)
    return {
        "status": root.status,
        "error": root.error,
        "routing": _routing(root.routing),
        "experts": [r.agent_config.get("name", "") for r in by_creation if r.parent_id],
        "tool_calls": [_call(m["agent"] or {}, m["tool"] or {}) for m in calls],
        "answer": root.answer,
        "citations": [_citation(c) for c in root.citations or []],
        "tree": [_node(r) for r in runs],
        "model_calls": root.tree_model_calls,
        "tokens": budget_tokens_used(root_id=root.pk),
        "latency_ms": latency,
        "cost": cost,
        "cost_note": note,
        "currency": settings.USAGE_CURRENCY,
    }


def _routing(routing: dict[str, Any] | None) -> dict[str, Any]:
    keep = (
        "mode",
        "target",
        "reason",
        "matched_rule",
        "fallback_used",
        "policy",
        "intent",
        "learning",
    )
    return {k: routing.get(k) for k in keep} if routing else {}


def _call(agent: dict[str, Any], tool: dict[str, Any]) -> dict[str, Any]:
    result = tool.get("result")
    text = json.dumps(result, ensure_ascii=False, default=str) if result is not None else ""
    return {
        "agent": agent.get("name", ""),
        "path": agent.get("path", []),
        "name": tool.get("name", ""),
        "arguments": tool.get("arguments"),
        "ok": tool.get("ok"),
        "result": text[:RESULT_CHARS],
        "error": tool.get("error"),
    }


def _citation(citation: dict[str, Any]) -> dict[str, Any]:
    keep = ("ref", "document_id", "title", "version", "quote")
    return {k: citation.get(k) for k in keep if k in citation}


def _node(run: Run) -> dict[str, Any]:
    duration = (
        int((run.finished_at - run.started_at).total_seconds() * 1000)
        if run.started_at and run.finished_at
        else None
    )
    return {
        "run_id": str(run.pk),
        "agent": run.agent_config.get("name", ""),
        "display_name": run.agent_config.get("display_name", ""),
        "model": _model(run.agent_config),
        "depth": run.depth,
        "path": run.path,
        "status": run.status,
        "steps": run.steps,
        "tokens": int((run.usage or {}).get("total_tokens", 0)),
        "duration_ms": duration,
        "reason": run.routing_reason,
        "answer": (run.answer or "")[:TEXT_CHARS],
        "error": run.error,
    }


def _model(config: dict[str, Any]) -> str:
    """Which model answered: "offline", or the model name (blank: the default one)."""
    if config.get("provider") == "offline":
        return "offline"
    return config.get("model") or f"{config.get('provider', 'default')} (default model)"


def _cost(root: Run) -> tuple[str | None, str]:
    """The turn's cost from the usage ledger, or None with why it is unknown."""
    unpriced = sorted(
        {
            f"{provider}/{model}"
            for provider, model in UsageRecord.objects.filter(
                root_id=root.pk, priced=False
            ).values_list("provider", "model")
        }
    )
    if unpriced:
        return None, (
            f"No price for {', '.join(unpriced)} in the price table (Usage and cost → model "
            "prices), so this turn's cost is unknown."
        )
    return money_text(turn_cost(root_id=root.pk)), ""
