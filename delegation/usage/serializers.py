"""API shapes of usage reports: the query, grouped rows with costs as decimal strings, turns."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import serializers

from delegation.usage.money import COST_DIGITS, COST_PLACES
from delegation.usage.selectors import GROUPS, report_period

STAFF_GROUPS = list(GROUPS)
MINE_GROUPS = [g for g in GROUPS if g != "user"]


def _cost() -> serializers.DecimalField:
    return serializers.DecimalField(
        max_digits=COST_DIGITS,
        decimal_places=COST_PLACES,
        coerce_to_string=True,
        help_text=f'A decimal string with {COST_PLACES} places, e.g. "0.0012345000".',
    )


def _with_period(fields: dict[str, serializers.Field], **kwargs: Any) -> dict[str, Any]:
    """Adds `from` and `to` (Python keywords, so they cannot be declared as attributes)."""
    return {
        **fields,
        "from": serializers.DateField(**kwargs),
        "to": serializers.DateField(**kwargs),
    }


class PeriodQuerySerializer(serializers.Serializer):
    """`from` and `to`: dates, both included; default the last 30 days, at most 366."""

    def get_fields(self) -> dict[str, serializers.Field]:
        """The declared fields and the period."""
        return _with_period(super().get_fields(), required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """`from` on or before `to`, at most MAX_DAYS days apart."""
        try:
            start, end = report_period(attrs.get("from"), attrs.get("to"), timezone.localdate())
        except ValueError as exc:
            raise serializers.ValidationError({"from": [str(exc)]}) from exc
        return {**attrs, "from": start, "to": end}


class StaffReportQuerySerializer(PeriodQuerySerializer):
    """A staff report's query."""

    group_by = serializers.ChoiceField(choices=STAFF_GROUPS, default="day")


class MyReportQuerySerializer(PeriodQuerySerializer):
    """The query of a user's own report (no grouping by user: it is one user)."""

    group_by = serializers.ChoiceField(choices=MINE_GROUPS, default="day")


class TurnsQuerySerializer(PeriodQuerySerializer):
    """The costliest turns' query: the period and how many."""

    limit = serializers.IntegerField(min_value=1, max_value=100, default=10)


class UsageRowSerializer(serializers.Serializer):
    """One group's totals (every figure summed from the ledger)."""

    key = serializers.CharField(
        help_text="The day (YYYY-MM-DD), agent name, username, session id or provider/model."
    )
    prompt_tokens = serializers.IntegerField()
    cached_tokens = serializers.IntegerField(help_text="Part of prompt_tokens.")
    completion_tokens = serializers.IntegerField()
    model_calls = serializers.IntegerField()
    cost = _cost()
    currency = serializers.CharField()


class UsageReportSerializer(serializers.Serializer):
    """A report: its grouping, period, rows and totals (one row per currency)."""

    group_by = serializers.CharField()
    rows = UsageRowSerializer(many=True)
    totals = UsageRowSerializer(many=True)

    def get_fields(self) -> dict[str, serializers.Field]:
        """The declared fields and the period."""
        return _with_period(super().get_fields())


class TurnNodeSerializer(serializers.Serializer):
    """One run of a turn's tree with its own cost."""

    run_id = serializers.UUIDField()
    agent = serializers.CharField()
    depth = serializers.IntegerField()
    status = serializers.CharField()
    model_calls = serializers.IntegerField()
    cost = _cost()


class CostlyTurnSerializer(serializers.Serializer):
    """A turn with its total cost and the cost of every run in its tree."""

    root_id = serializers.UUIDField()
    user = serializers.CharField()
    agent = serializers.CharField()
    started_at = serializers.DateTimeField(allow_null=True)
    model_calls = serializers.IntegerField()
    cost = _cost()
    currency = serializers.CharField()
    tree = TurnNodeSerializer(many=True)
