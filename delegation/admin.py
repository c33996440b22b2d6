"""Admin for runs: turns as trees with status, duration, tokens and cost per agent, filterable."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import F, OuterRef, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.utils.html import format_html

from delegation.models import Run
from delegation.selectors import run_tree
from delegation.usage.money import money_text
from delegation.usage.selectors import ledger_cost, run_costs, turn_cost


def duration_text(run: Run) -> str:
    """Wall time from start to finish, or '-'."""
    if run.started_at and run.finished_at:
        return f"{(run.finished_at - run.started_at).total_seconds():.2f} s"
    return "-"


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of work done (a child run is a delegation): browsable, never edited."""

    list_display = [
        "agent_in_tree",
        "status",
        "user",
        "steps",
        "tokens",
        "turn_tokens",
        "cost",
        "duration",
        "created_at",
    ]
    list_filter = ["status", "agent", ("user", admin.RelatedOnlyFieldListFilter), "depth"]
    search_fields = ["id", "task", "user__username", "agent__name"]
    raw_id_fields = ["session", "user", "parent", "root", "user_message"]
    readonly_fields = [f.name for f in Run._meta.fields]
    change_form_template = "admin/delegation/run/change_form.html"

    def get_queryset(self, request: HttpRequest) -> QuerySet[Run]:
        """Newest turn first, each turn's runs together in the order they started."""
        return (
            super()
            .get_queryset(request)
            .select_related("agent", "user", "root")
            .annotate(
                turn_started=Coalesce(F("root__created_at"), F("created_at")),
                own_cost=ledger_cost(run_id=OuterRef("pk")),
                tree_cost=ledger_cost(root_id=OuterRef("pk")),
            )
            .order_by("-turn_started", "created_at")
        )

    @admin.display(description="agent")
    def agent_in_tree(self, obj: Run) -> str:
        """The agent, indented by depth, with the path as a tooltip."""
        return format_html(
            '<span style="padding-left:{}em" title="{}">{}{}</span>',
            obj.depth * 1.5,
            " → ".join(obj.path),
            "↳ " if obj.depth else "",
            obj.agent_config.get("display_name", ""),
        )

    @admin.display(description="tokens")
    def tokens(self, obj: Run) -> int:
        """Tokens of this run's own model calls."""
        return int((obj.usage or {}).get("total_tokens", 0))

    @admin.display(description="turn tokens")
    def turn_tokens(self, obj: Run) -> str:
        """Tokens of the whole turn (on its root run)."""
        return str(obj.tree_tokens) if obj.root_id is None else ""

    @admin.display(description="cost")
    def cost(self, obj: Run) -> str:
        """The run's own cost; on a turn's root run, the whole turn's too (from the ledger)."""
        own = money_text(getattr(obj, "own_cost", None))
        if obj.root_id is not None:
            return own
        return f"{own} (turn {money_text(getattr(obj, 'tree_cost', None))})"

    @admin.display(description="duration")
    def duration(self, obj: Run) -> str:
        """Wall time from start to finish."""
        return duration_text(obj)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> Any:
        """The run's page, with its whole turn as a tree."""
        run = self.get_object(request, object_id)
        runs = run_tree(run=run) if run else []
        costs = run_costs(run_ids=[r.pk for r in runs])
        tree = [
            {
                "run": r,
                "indent": r.depth * 1.5,
                "duration": duration_text(r),
                "tokens": (r.usage or {}).get("total_tokens", 0),
                "cost": money_text(costs.get(r.pk)),
                "current": r.pk == getattr(run, "pk", None),
            }
            for r in runs
        ]
        extra = {
            "tree": tree,
            "turn_cost": money_text(turn_cost(root_id=run.root_id_or_self) if run else 0),
            "currency": settings.USAGE_CURRENCY,
            "routing": runs[0].routing if runs else None,  # the root's decision
        }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Runs start from chat, not from admin."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Read-only."""
        return False
