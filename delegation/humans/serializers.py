"""API shapes of inbox items, decisions, reviews, activity rows and agent states."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from config.api_fields import StrictCharField
from delegation.humans.models import Activity, ActivityKind, Decision, Review, ReviewStatus
from delegation.humans.selectors import item_as_data


class AgentRefSerializer(serializers.Serializer):
    """The agent that asked: name, display name and its path in the delegation tree."""

    name = serializers.CharField()
    display_name = serializers.CharField()
    path = serializers.ListField(child=serializers.CharField())


class InboxItemSerializer(serializers.Serializer):
    """One question or tool call waiting for (or decided by) a person."""

    id = serializers.UUIDField()
    kind = serializers.ChoiceField(choices=["question", "tool_approval"])
    audience = serializers.ChoiceField(
        choices=["staff", "user"], help_text="staff: the inbox; user: the end user (ask_user)."
    )
    question = serializers.CharField(help_text="The question (empty for a tool approval).")
    options = serializers.ListField(child=serializers.CharField())
    urgency = serializers.ChoiceField(choices=["low", "normal", "high"])
    tool = serializers.CharField(allow_null=True, help_text="The tool key (tool approvals).")
    arguments = serializers.JSONField(allow_null=True, help_text="As the model wrote them.")
    final_arguments = serializers.JSONField(
        allow_null=True, help_text="What ran (set on approve, or the modified arguments)."
    )
    run_id = serializers.UUIDField()
    agent = AgentRefSerializer()
    on_behalf_of = serializers.CharField(help_text="The user the run acts for.")
    group = serializers.CharField(allow_null=True, help_text="The assignment group.")
    created_at = serializers.DateTimeField()
    deadline = serializers.DateTimeField(help_text="Past it the run goes on without an answer.")
    status = serializers.ChoiceField(
        choices=["pending", "answered", "approved", "modified", "rejected", "expired", "cancelled"]
    )
    decision = serializers.CharField(allow_null=True)
    answer = serializers.CharField()
    note = serializers.CharField()
    decided_by = serializers.CharField(allow_null=True)
    decided_at = serializers.DateTimeField(allow_null=True)
    executed = serializers.BooleanField(help_text="The approved tool ran (exactly once).")

    def to_representation(self, instance: Any) -> dict[str, Any]:
        """The item as `item_as_data` shapes it (the `inbox.*` events carry the same)."""
        return item_as_data(instance)


class InboxPageSerializer(serializers.Serializer):
    """A cursor page of inbox items."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = InboxItemSerializer(many=True)


class DecisionSerializer(serializers.Serializer):
    """A decision: approve (with `answer` for a question), modify (with `arguments`) or reject."""

    decision = serializers.ChoiceField(choices=Decision.values)
    answer = StrictCharField(
        required=False, allow_blank=True, help_text="The reply to a question (approve)."
    )
    note = StrictCharField(required=False, allow_blank=True, help_text="A remark kept on the item.")
    arguments = serializers.JSONField(
        required=False, help_text="modify: the tool's new arguments (checked against its schema)."
    )


class ReviewSerializer(serializers.ModelSerializer):
    """A flagged answer with its question, issue, citations and the turn's tree."""

    run_id = serializers.UUIDField()
    session_id = serializers.UUIDField()
    on_behalf_of = serializers.CharField(source="user.username")
    reviewed_by = serializers.CharField(source="reviewed_by.username", allow_null=True)
    tree = serializers.SerializerMethodField()

    class Meta:
        model = Review
        fields = [
            "id",
            "run_id",
            "session_id",
            "message_id",
            "agent_name",
            "group",
            "on_behalf_of",
            "question",
            "answer",
            "issue",
            "citations",
            "status",
            "note",
            "corrected_answer",
            "followup_message_id",
            "reviewed_by",
            "reviewed_at",
            "created_at",
            "tree",
        ]
        read_only_fields = fields

    def get_tree(self, review: Review) -> list[dict[str, Any]]:
        """Each run of the turn: who, depth, status, task, answer and the check of its answer."""
        tree = self.context.get("trees", {}).get(review.run_id, [])
        return [
            {
                "run_id": str(run.id),
                "agent": run.agent_config["name"],
                "display_name": run.agent_config["display_name"],
                "depth": run.depth,
                "status": run.status,
                "task": run.task,
                "answer": run.answer,
                "validation": run.validation,
            }
            for run in tree
        ]


class ReviewPageSerializer(serializers.Serializer):
    """A cursor page of reviews."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ReviewSerializer(many=True)


class ReviewDecisionSerializer(serializers.Serializer):
    """A reviewer's mark: correct, wrong (with a note) or fixed (with the corrected answer)."""

    status = serializers.ChoiceField(
        choices=[ReviewStatus.CORRECT, ReviewStatus.WRONG, ReviewStatus.FIXED]
    )
    note = StrictCharField(required=False, allow_blank=True)
    corrected_answer = StrictCharField(
        required=False, allow_blank=True, help_text="fixed: sent to the user's chat from Reviewer."
    )


class ActivitySerializer(serializers.ModelSerializer):
    """One activity row."""

    user = serializers.CharField(source="user.username", allow_null=True)
    actor = serializers.CharField(source="actor.username", allow_null=True)

    class Meta:
        model = Activity
        fields = ["id", "created_at", "kind", "agent_name", "run", "root_id", "user", "actor"]
        fields += ["summary", "data"]
        read_only_fields = fields


class ActivityPageSerializer(serializers.Serializer):
    """A cursor page of activity rows."""

    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ActivitySerializer(many=True)


class ActivityQuerySerializer(serializers.Serializer):
    """Filters of the activity log."""

    kind = serializers.ChoiceField(choices=ActivityKind.values, required=False)
    agent = serializers.CharField(required=False, allow_blank=True, max_length=64)
    run = serializers.UUIDField(required=False, help_text="The turn (root run) or any run in it.")
    since = serializers.DateTimeField(required=False)
    until = serializers.DateTimeField(required=False)
    cursor = serializers.CharField(required=False, allow_blank=True)


class AgentStateSerializer(serializers.Serializer):
    """An agent's live state and quality counts."""

    name = serializers.CharField()
    display_name = serializers.CharField()
    state = serializers.ChoiceField(
        choices=["idle", "working", "blocked_internal", "blocked_user"],
        help_text="blocked_internal: waiting for experts; blocked_user: waiting for a human.",
    )
    working = serializers.IntegerField()
    blocked_internal = serializers.IntegerField()
    blocked_user = serializers.IntegerField()
    oldest_wait = serializers.DateTimeField(allow_null=True)
    text = serializers.CharField()
    quality = serializers.DictField(child=serializers.IntegerField())
