"""API shape of a run and its delegation tree."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.permissions import holds_model_permission
from delegation.humans.models import InboxItem, ItemStatus
from delegation.humans.selectors import waiting_for
from delegation.models import Run, RunStatus
from delegation.routing.selectors import routing_mode
from delegation.runs.emitter import agent_tag
from delegation.tree.budget import budget_tokens_used


class RunSerializer(serializers.ModelSerializer):
    """A run with its agent tag, timings, tokens and (nested) the experts it asked."""

    agent = serializers.SerializerMethodField()
    duration_ms = serializers.SerializerMethodField()
    children = serializers.SerializerMethodField()
    mode = serializers.SerializerMethodField()
    routing = serializers.SerializerMethodField()
    waiting_for = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = [
            "id",
            "status",
            "waiting_for",
            "agent",
            "parent",
            "depth",
            "task",
            "answer",
            "error",
            "routing_reason",
            "mode",
            "routing",
            "citations",
            "confidence",
            "needs_review",
            "validation",
            "usage",
            "steps",
            "created_at",
            "started_at",
            "finished_at",
            "duration_ms",
            "children",
        ]
        read_only_fields = fields

    def get_agent(self, run: Run) -> dict[str, Any]:
        """The `{kind, name, display_name, depth, path}` tag."""
        return agent_tag(run)

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_waiting_for(self, run: Run) -> list[str]:
        """Who a run in `waiting_human` waits for ("the Finance team", "you", …)."""
        if run.status != RunStatus.WAITING_HUMAN:
            return []
        items = InboxItem.objects.filter(run=run, status=ItemStatus.PENDING)
        return [waiting_for(item) for item in items.order_by("created_at")]

    def get_duration_ms(self, run: Run) -> int | None:
        """Start to finish, once finished."""
        if run.started_at and run.finished_at:
            return int((run.finished_at - run.started_at).total_seconds() * 1000)
        return None

    @extend_schema_field(
        {"type": "string", "nullable": True, "enum": ["GUIDE", "CHAT", "STRICT", None]}
    )
    def get_mode(self, run: Run) -> str | None:
        """GUIDE, CHAT or STRICT when a routing policy routed the turn (on the root run)."""
        return routing_mode(run.routing) if run.parent_id is None else None

    @extend_schema_field({"type": "object", "nullable": True, "additionalProperties": True})
    def get_routing(self, run: Run) -> dict[str, Any] | None:
        """The routing decision of the turn (root runs; for who may view runs in the admin,
        else null)."""
        request = self.context.get("request")
        user = getattr(request, "user", None)
        if run.parent_id is not None or not holds_model_permission(user, Run, "view"):
            return None
        return run.routing

    def get_children(self, run: Run) -> list[dict[str, Any]]:
        """The runs this one delegated to, each with its own children."""
        by_parent: dict[Any, list[Run]] = self.context.get("by_parent", {})
        return RunSerializer(by_parent.get(run.id, []), many=True, context=self.context).data


class TurnSerializer(RunSerializer):
    """A run as the root of a tree, with the turn's totals."""

    turn = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "turn"]
        read_only_fields = fields

    def get_turn(self, run: Run) -> dict[str, int]:
        """Model calls, tokens and delegations of the whole turn, as its budget counts them (a
        call counts once the budget grants it, which can be just before it is made)."""
        root = run.root or run
        return {
            "model_calls": root.tree_model_calls,
            "tokens": budget_tokens_used(root_id=root.pk),
            "delegations": root.tree_delegations,
        }
