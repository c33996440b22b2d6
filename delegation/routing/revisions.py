"""Versions of routing policies: every save stores the policy with its rules, to diff and
restore, like agents."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

from agents.models import Agent
from delegation.routing.models import RoutingPolicy, RoutingPolicyRevision, RoutingRule

POLICY_FIELDS = [
    "description",
    "default_mode",
    "chat_top_k",
    "router_enabled",
    "router_provider",
    "router_model",
    "router_timeout",
    "memory_per_user",
]
RULE_FIELDS = [
    "kind",
    "order",
    "enabled",
    "name",
    "keywords",
    "pattern",
    "max_chars",
    "mode",
    "strict_on_numbers",
    "reason",
]


def policy_snapshot(*, policy: RoutingPolicy) -> dict[str, Any]:
    """The policy, its entry agents and its rules as plain JSON (agents by name)."""
    return {
        **{f: getattr(policy, f) for f in POLICY_FIELDS},
        "entry_agents": sorted(policy.entry_agents.values_list("name", flat=True)),
        "rules": [
            {
                **{f: getattr(r, f) for f in RULE_FIELDS},
                "target": r.target.name if r.target else None,
            }
            for r in policy.rules.select_related("target").order_by("kind", "order", "pk")
        ],
    }


def policy_revision_record(
    *, policy: RoutingPolicy, user: Any = None, comment: str = ""
) -> RoutingPolicyRevision:
    """Bump the policy's version and store what it is now (call after its rules are saved)."""
    RoutingPolicy.objects.filter(pk=policy.pk).update(version=F("version") + 1)
    policy.refresh_from_db(fields=["version"])
    return RoutingPolicyRevision.objects.create(
        policy=policy,
        version=policy.version,
        snapshot={**policy_snapshot(policy=policy), "comment": comment[:200]},
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


@transaction.atomic
def policy_revision_restore(*, revision: RoutingPolicyRevision, user: Any = None) -> None:
    """Make the policy as it was in `revision` (agents that no longer exist are left out)."""
    policy, snapshot = revision.policy, revision.snapshot
    for field in POLICY_FIELDS:
        setattr(policy, field, snapshot[field])
    policy.save()
    policy.entry_agents.set(Agent.objects.filter(name__in=snapshot["entry_agents"]))
    policy.rules.all().delete()
    for rule in snapshot["rules"]:
        target = Agent.objects.filter(name=rule["target"]).first() if rule["target"] else None
        RoutingRule.objects.create(
            policy=policy, target=target, **{f: rule[f] for f in RULE_FIELDS}
        )
    policy_revision_record(policy=policy, user=user, comment=f"restored v{revision.version}")
