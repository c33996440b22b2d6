"""Small factories for test data."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.utils import timezone

from agents.models import Agent
from agents.services import agent_revision_record
from delegation.models import Run
from delegation.runs.create import pinned_config

_counter = itertools.count(1)


def make_user(username: str | None = None, **fields: Any) -> Any:
    """A user with password 'pw'."""
    name = username or f"user{next(_counter)}"
    return get_user_model().objects.create_user(name, password="pw", **fields)


def grant(user: Any, *perms: str) -> Any:
    """Give the user these permissions ("app_label.codename"), seen by its next check."""
    for perm in perms:
        app_label, codename = perm.split(".", 1)
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    for cache in ("_perm_cache", "_user_perm_cache", "_group_perm_cache"):
        user.__dict__.pop(cache, None)  # ModelBackend caches what it read on the instance
    return user


def model_perms(*models: str, actions: str = "view add change delete") -> list[str]:
    """The permissions of these models ("app_label.model_name"): each of `actions`."""
    names = [model.split(".", 1) for model in models]
    return [f"{app}.{action}_{name}" for app, name in names for action in actions.split()]


def make_agent(name: str | None = None, *, subagents: list[Agent] = (), **fields: Any) -> Agent:
    """An enabled agent with a first revision recorded, as admin would save it."""
    name = name or f"agent{next(_counter)}"
    defaults: dict[str, Any] = {
        "display_name": name.title(),
        "description": f"{name} agent",
        "provider": "offline",
        "system_prompt": f"You are {name}.",
        "tool_keys": [],
    }
    defaults.update(fields)
    agent = Agent.objects.create(name=name, **defaults)
    if subagents:
        agent.allowed_subagents.set(subagents)
    agent_revision_record(agent=agent, comment="test")
    agent.refresh_from_db()
    return agent


def make_child_run(
    *, caller: Any, target: Agent, call_id: str, prompt: str, reason: str, max_steps: int
) -> Any:
    """A queued expert's run below `caller`, as a delegation makes it, without running it."""
    root = caller.root_or_self
    config = pinned_config(target)
    config["max_steps"] = max(1, min(config["max_steps"], max_steps))
    return Run.objects.create(
        session_id=caller.session_id,
        user=caller.user,
        agent=target,
        agent_version=target.version,
        agent_config=config,
        parent=caller,
        parent_tool_call_id=call_id,
        root=root,
        depth=caller.depth + 1,
        path=[*caller.path, target.name],
        task=prompt,
        language=caller.language,
        routing_reason=reason[:500],
        transcript=[{"role": "user", "content": prompt}],
        queued_at=timezone.now(),
        deadline=min(root.deadline, timezone.now() + timedelta(minutes=5)),
    )
