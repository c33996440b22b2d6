"""API shapes of evals: suites, cases, runs with their results, drafts the gate holds."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import Agent
from config.api_fields import (
    StrictCharField,
    StrictIntegerField,
    StrictModelSerializer,
    StrictSlugRelatedField,
)
from delegation.evals.models import AgentDraft, EvalCase, EvalCaseResult, EvalRun, EvalSuite
from delegation.usage.money import COST_DIGITS, COST_PLACES


class EvalSuiteSerializer(StrictModelSerializer):
    """A suite: the agent its cases talk to, its threshold and gate."""

    agent = StrictSlugRelatedField(slug_field="name", queryset=Agent.objects.all())
    gate_agents = StrictSlugRelatedField(
        slug_field="name", many=True, required=False, queryset=Agent.objects.all()
    )
    case_count = serializers.SerializerMethodField()

    class Meta:
        model = EvalSuite
        fields = [
            "id",
            "name",
            "description",
            "agent",
            "pass_threshold",
            "publish_gate",
            "gate_agents",
            "judge_model",
            "case_timeout",
            "case_count",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "case_count", "created_at", "updated_at"]
        extra_kwargs = {"name": {"validators": []}}  # uniqueness: the save service (409-free 400)

    def get_case_count(self, suite: EvalSuite) -> int:
        """How many cases the suite has."""
        return suite.cases.count()


class EvalCaseSerializer(StrictModelSerializer):
    """A case. `expect` holds the expectations (docs/evals.md); the save service checks them."""

    user_groups = StrictSlugRelatedField(
        slug_field="name", many=True, required=False, queryset=Group.objects.all()
    )
    user_permissions = serializers.ListField(
        child=StrictCharField(max_length=255), required=False, max_length=100
    )
    prior_turns = serializers.JSONField(required=False)
    flags = serializers.JSONField(required=False)
    expect = serializers.JSONField(required=False)

    class Meta:
        model = EvalCase
        fields = [
            "id",
            "suite",
            "name",
            "order",
            "enabled",
            "message",
            "prior_turns",
            "flags",
            "user_groups",
            "user_permissions",
            "user_timezone",
            "expect",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "suite", "created_at", "updated_at"]
        validators: list[Any] = []  # (suite, name) uniqueness: the save service


def _cost() -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=COST_DIGITS,
        decimal_places=COST_PLACES,
        coerce_to_string=True,
        allow_null=True,
        help_text="The turn's cost from the usage ledger (null: unknown, e.g. an unpriced model).",
    )


class EvalCaseResultSerializer(serializers.ModelSerializer):
    """One case of a run: each expectation's verdict with the evidence."""

    cost = _cost()
    expectations = serializers.JSONField()
    evidence = serializers.JSONField()
    case_snapshot = serializers.JSONField()

    class Meta:
        model = EvalCaseResult
        fields = [
            "position",
            "name",
            "case",
            "status",
            "case_snapshot",
            "expectations",
            "evidence",
            "latency_ms",
            "tokens",
            "model_calls",
            "cost",
            "error",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class EvalRunSerializer(serializers.ModelSerializer):
    """A run of a suite: what it ran against and how it did."""

    suite = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    pass_rate = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = EvalRun
        fields = [
            "id",
            "suite",
            "status",
            "trigger",
            "target",
            "model",
            "threshold",
            "total",
            "done",
            "passed",
            "failed",
            "pass_rate",
            "succeeded",
            "error",
            "draft",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class CaseDiffSerializer(serializers.Serializer):
    """A case against the previous run: fixed, broke, new or same."""

    name = serializers.CharField()
    before = serializers.CharField(allow_null=True)
    after = serializers.CharField()
    change = serializers.ChoiceField(choices=["fixed", "broke", "new", "same"])


class EvalRunReportSerializer(EvalRunSerializer):
    """A run with each case's result and the diff against the suite's previous run."""

    results = EvalCaseResultSerializer(many=True, read_only=True)
    previous_run = serializers.UUIDField(allow_null=True, read_only=True)
    diff = CaseDiffSerializer(many=True, read_only=True)

    class Meta(EvalRunSerializer.Meta):
        fields = [*EvalRunSerializer.Meta.fields, "previous_run", "diff", "results"]
        read_only_fields = fields


class EvalRunStartSerializer(serializers.Serializer):
    """What to run the suite against: current versions, or one agent at a stored version;
    and optionally one model for every agent ("offline": the built-in model)."""

    agent = StrictSlugRelatedField(
        slug_field="name",
        queryset=Agent.objects.all(),
        required=False,
        help_text="With agent_version: whose version (default: the suite's agent).",
    )
    agent_version = StrictIntegerField(required=False, min_value=1)
    model = StrictCharField(required=False, allow_blank=True, max_length=200, default="")


class SuiteRunSummarySerializer(serializers.Serializer):
    """A gated suite's run of a draft."""

    suite = serializers.CharField()
    eval_run = serializers.UUIDField()
    status = serializers.CharField()
    passed = serializers.IntegerField()
    total = serializers.IntegerField()
    pass_rate = serializers.FloatField(allow_null=True)
    threshold = serializers.IntegerField()
    succeeded = serializers.BooleanField(allow_null=True)
    failing = serializers.ListField(child=serializers.CharField())


class AgentDraftSerializer(serializers.ModelSerializer):
    """A save the publish gate held, with each gated suite's run."""

    agent = serializers.SlugRelatedField(slug_field="name", read_only=True)
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    decided_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    data = serializers.JSONField()
    suites = serializers.SerializerMethodField()

    class Meta:
        model = AgentDraft
        fields = [
            "id",
            "agent",
            "base_version",
            "status",
            "data",
            "comment",
            "note",
            "created_by",
            "created_at",
            "decided_by",
            "decided_at",
            "override_reason",
            "published_version",
            "suites",
        ]
        read_only_fields = fields

    @extend_schema_field(SuiteRunSummarySerializer(many=True))
    def get_suites(self, draft: AgentDraft) -> list[dict[str, Any]]:
        """Each gated suite's run of the draft."""
        return self.context["summary"]


class DraftPublishSerializer(serializers.Serializer):
    """Publishing a held draft anyway: the reason is recorded with the revision."""

    reason = StrictCharField(required=False, allow_blank=True, max_length=2000, default="")


class PublishedSerializer(serializers.Serializer):
    """The version a draft was published as, and whether it was over failing evals."""

    version = serializers.IntegerField()
    passed = serializers.BooleanField()
    override = serializers.BooleanField()
