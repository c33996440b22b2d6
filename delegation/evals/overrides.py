"""What an eval turn runs against: the live definitions, or a draft / an older revision of one
agent pinned as its runs' `agent_config` (the live Agent row is never touched), and optionally
one model for every run of the turn.

Runs pin their config when they are created (delegation.runs.create.run_create and
run_start_child). The root run of an eval turn is re-pinned before its transaction commits;
an expert's run is pinned by `child_run_pin`, a hook the engine calls before it writes the
run (delegation.hooks; docs/evals.md, "Drafts of experts")."""

from __future__ import annotations

from typing import Any

from agents.knowledge.tools import knowledge_tool_keys_for
from agents.models import Agent, AgentRevision
from delegation.evals.models import EvalCaseResult
from delegation.evals.sandbox import is_sandbox_user
from delegation.evals.targets import OFFLINE
from delegation.models import Run
from delegation.routing.stats import EVAL_FLAG
from delegation.runs.create import pinned_config


def config_from_snapshot(*, agent: Agent, snapshot: dict[str, Any]) -> dict[str, Any]:
    """A run config from a definition snapshot (a draft or a revision): fields the snapshot
    lacks (added since) keep today's values, and linked knowledge adds the kb tools."""
    config = {**pinned_config(agent), **snapshot}
    extra = [k for k in knowledge_tool_keys_for(agent) if k not in config["tool_keys"]]
    config["tool_keys"] = [*config["tool_keys"], *extra]
    return config


def revision_config(*, revision: AgentRevision) -> dict[str, Any]:
    """The run config of an agent as it was at `revision`."""
    return config_from_snapshot(agent=revision.agent, snapshot=revision.snapshot)


def with_model(config: dict[str, Any], model: str) -> dict[str, Any]:
    """The config answering with `model` ("offline": the built-in model) instead of its own."""
    if not model:
        return config
    if model == OFFLINE:
        return {**config, "provider": OFFLINE}
    return {**config, "provider": "openai", "model": model}


def pinned_for(config: dict[str, Any], *, overrides: dict[str, Any], model: str) -> dict[str, Any]:
    """The config an eval run uses instead of `config` (the live one it was created with)."""
    replaced = (overrides.get("agents") or {}).get(config.get("name", ""))
    return with_model(dict(replaced) if replaced else config, model)


def root_run_pin(*, run: Run, overrides: dict[str, Any], model: str) -> None:
    """Re-pin an eval turn's root run (call before the turn's transaction commits)."""
    config = pinned_for(run.agent_config, overrides=overrides, model=model)
    if config != run.agent_config:
        run.agent_config = config
        Run.objects.filter(pk=run.pk).update(agent_config=config)


def child_run_pin(child: Run, calls_granted: int) -> dict[str, Any]:
    """The config of an expert's run in an eval turn: its draft (or model) pinned, with the
    step limit the turn's budget granted it (`calls_granted`); else its own."""
    if not is_sandbox_user(child.user):
        return child.agent_config  # only sandbox users run eval turns: no lookup for others
    result = (
        EvalCaseResult.objects.filter(root_run_id=child.root_id)
        .select_related("eval_run")
        .only("eval_run__overrides", "eval_run__model")
        .first()
    )
    if result is None:
        return child.agent_config
    run = result.eval_run
    config = pinned_for(child.agent_config, overrides=run.overrides, model=run.model)
    if config == child.agent_config:
        return config
    return {**config, "max_steps": max(1, min(config["max_steps"], calls_granted))}


LEARNING = "routing_learning"  # the overrides' key: routing learning for every turn of the run


def root_run_routing(*, run: Run, overrides: dict[str, Any]) -> None:
    """Mark an eval turn's root run as an eval's in its routing request (routing counts no
    statistics from it) with the eval run's routing learning if it sets one (off, advisory,
    on), read when the turn is routed (call before the turn's transaction commits)."""
    request = {**run.routing_request, EVAL_FLAG: True}
    if overrides.get(LEARNING):
        request["learning"] = overrides[LEARNING]
    run.routing_request = request
    Run.objects.filter(pk=run.pk).update(routing_request=request)
