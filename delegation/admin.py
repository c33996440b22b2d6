"""Admin for runs: turns as traces and trees with status, duration, tokens and cost per agent."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.db.models import F, OuterRef, Prefetch, QuerySet
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.text import Truncator
from django.utils.translation import gettext_lazy as _

from chat.models import ChatMessage, MessageRole
from config.telemetry import trace_url
from delegation.models import Run
from delegation.selectors import run_tree
from delegation.tree.budget import turn_tokens as ledger_turn_tokens
from delegation.usage.money import money_display
from delegation.usage.selectors import ledger_cost, run_costs, turn_cost

# Planner results that did nothing (reminders/outcome.py): the call ran, but it is not "ok".
NOT_DONE = {
    "conflict": _("conflict"),
    "need_confirmation": _("needs confirmation"),
    "error": _("error"),
}
LINE_CHARS = 90  # the question and the answer's first line in the runs list


def cost_text(value: Any) -> str:
    """A cost in the platform's currency, for people (US$0.0042)."""
    return money_display(value, settings.USAGE_CURRENCY)


def first_line(text: str, chars: int = LINE_CHARS) -> str:
    """The first non-empty line of `text`, cut to `chars` characters."""
    line = next((part.strip() for part in (text or "").splitlines() if part.strip()), "")
    return Truncator(line).chars(chars)


def call_state(tool: dict[str, Any]) -> tuple[str, str]:
    """A tool call's state for the trace, (key, label): error when it failed, the planner's
    status when its result says nothing was done (conflict, needs confirmation), else ok."""
    if tool.get("ok") is False:
        return "error", str(_("error"))
    result = tool.get("result")
    status = result.get("status") if isinstance(result, dict) else None
    if status in NOT_DONE:
        return str(status), str(NOT_DONE[status])
    if tool.get("ok"):
        return "ok", str(_("ok"))
    return "", ""


def duration_text(run: Run) -> str:
    """Wall time from start to finish, or '-'."""
    if run.started_at and run.finished_at:
        return f"{(run.finished_at - run.started_at).total_seconds():.2f} s"
    return "-"


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _tool_calls(runs: list[Run]) -> dict[Any, list[dict[str, Any]]]:
    """Each run's tool calls (its chat messages of role tool), in order, for the trace."""
    children = {(r.parent_id, r.parent_tool_call_id): r.pk for r in runs if r.parent_id}
    calls: dict[Any, list[dict[str, Any]]] = {}
    messages = ChatMessage.objects.filter(
        run_id__in=[r.pk for r in runs], role=MessageRole.TOOL
    ).order_by("created_at", "id")
    for message in messages:
        tool = message.tool or {}
        outcome = tool.get("error") if tool.get("ok") is False else tool.get("result")
        if outcome is None and "delegation" in tool:
            outcome = tool["delegation"]
        state, state_label = call_state(tool)
        calls.setdefault(message.run_id, []).append(
            {
                "name": tool.get("name", "?"),
                "summary": tool.get("summary", ""),
                "ok": tool.get("ok"),
                "state": state,
                "state_label": state_label,
                "arguments": _pretty(tool.get("arguments", {})),
                "result": _pretty(outcome) if outcome is not None else "",
                "child": children.get((message.run_id, tool.get("call_id"))),
            }
        )
    return calls


def trace_build(
    *, runs: list[Run], costs: dict[Any, Any], current: Any, now: datetime | None = None
) -> list[dict[str, Any]]:
    """The turn (runs depth first) as nested nodes: timing bar within the turn, status,
    tokens, cost, routing reason, tool calls and children."""
    if not runs:
        return []
    now = now or timezone.now()
    start = min(r.started_at or r.created_at for r in runs)
    end = max(r.finished_at or now for r in runs)
    span = max((end - start).total_seconds(), 1e-6)
    calls = _tool_calls(runs)
    nodes: dict[Any, dict[str, Any]] = {}
    top: list[dict[str, Any]] = []
    for run in runs:
        began = run.started_at or run.created_at
        left = (began - start).total_seconds() / span * 100
        width = ((run.finished_at or now) - began).total_seconds() / span * 100
        node = {
            "run": run,
            "left": f"{left:.2f}",
            "width": f"{max(width, 0.5):.2f}",
            "duration": duration_text(run),
            "tokens": (run.usage or {}).get("total_tokens", 0),
            "cost": cost_text(costs.get(run.pk)),
            "tools": calls.get(run.pk, []),
            "children": [],
            "current": run.pk == current,
        }
        nodes[run.pk] = node
        parent = nodes.get(run.parent_id)
        (parent["children"] if parent else top).append(node)
    return top


class TurnFilter(admin.SimpleListFilter):
    """By default one row per turn (its root run, its experts listed under it); any other
    filter or a search shows every matching run."""

    title = _("runs shown")
    parameter_name = "runs"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, Any]]:
        """Turns (the default) or every run."""
        return [("all", _("every run (experts too)"))]

    def choices(self, changelist: Any) -> Any:
        """'Turns' is the default choice, not 'All'."""
        yield {
            "selected": self.value() is None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "display": _("turns (root runs)"),
        }
        yield {
            "selected": self.value() == "all",
            "query_string": changelist.get_query_string({self.parameter_name: "all"}),
            "display": _("every run (experts too)"),
        }

    def queryset(self, request: HttpRequest, queryset: QuerySet[Run]) -> QuerySet[Run]:
        """Root runs only, unless 'every run' or another filter or a search is in use."""
        others = set(request.GET) - {self.parameter_name, "o", "p", "_changelist_filters"}
        if self.value() == "all" or others:
            return queryset
        return queryset.filter(root__isnull=True)


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    """Runs are records of work done (a child run is a delegation): browsable, never edited."""

    list_display = [
        "agent_in_tree",
        "exchange",
        "status",
        "user",
        "tokens",
        "cost",
        "duration",
        "turn",
        "created_at",
    ]
    list_filter = [
        TurnFilter,
        "status",
        "agent",
        ("user", admin.RelatedOnlyFieldListFilter),
        "depth",
    ]
    # The question (a root run's task is the user's message) and the answer; transcripts are
    # JSON and too costly to search.
    search_fields = ["task", "answer", "id", "user__username", "agent__name"]
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
                turn_tokens_used=ledger_turn_tokens(OuterRef("pk")),
            )
            .prefetch_related(
                Prefetch(
                    "descendants",
                    queryset=Run.objects.annotate(own_cost=ledger_cost(run_id=OuterRef("pk")))
                    .select_related("agent")
                    .order_by("created_at"),
                )
            )
            .order_by("-turn_started", "created_at")
        )

    @admin.display(description=_("question and answer"))
    def exchange(self, obj: Run) -> str:
        """What the run was asked (the user's question on a turn, the task on an expert) over
        the answer's first line, or the error's message when it failed."""
        answer: str
        if obj.error:
            answer = format_html(
                '<span class="run-error">{}</span>', first_line(str(obj.error.get("message", "")))
            )
        else:
            answer = first_line(obj.answer)
        return format_html(
            '<div class="run-question">{}</div><div class="run-answer">{}</div>',
            first_line(obj.task),
            answer,
        )

    @admin.display(description=_("turn"))
    def turn(self, obj: Run) -> str:
        """On a root run: its experts, nested, each linked with status and cost."""
        if obj.root_id is not None:
            url = reverse("admin:delegation_run_change", args=[obj.pk])
            return format_html('<a href="{}#trace">{}</a>', url, _("its turn's trace"))
        runs = _depth_first(list(obj.descendants.all()), obj.pk)
        url = reverse("admin:delegation_run_change", args=[obj.pk])
        experts = format_html_join(
            "",
            '<br><span style="padding-left:{}em">↳ <a href="{}">{}</a> {} · {}</span>',
            (
                (
                    (r.depth - 1) * 1.2,
                    reverse("admin:delegation_run_change", args=[r.pk]),
                    r.agent_shown,
                    r.get_status_display(),
                    cost_text(getattr(r, "own_cost", None)),
                )
                for r in runs
            ),
        )
        label = _("trace of %(count)s run(s)") % {"count": len(runs) + 1}
        return format_html('<a href="{}#trace">{}</a>{}', url, label, experts)

    @admin.display(description=_("agent"))
    def agent_in_tree(self, obj: Run) -> str:
        """The agent, indented by depth, with the path as a tooltip."""
        return format_html(
            '<span style="padding-left:{}em" title="{}">{}{}</span>',
            obj.depth * 1.5,
            " → ".join(obj.path),
            "↳ " if obj.depth else "",
            obj.agent_shown,
        )

    @admin.display(description=_("tokens"))
    def tokens(self, obj: Run) -> str:
        """Tokens of this run's own model calls; on a turn's root run, the whole turn's too
        (its ledger's, read by get_queryset)."""
        own = int((obj.usage or {}).get("total_tokens", 0))
        if obj.root_id is not None:
            return str(own)
        return str(_("%(own)s (turn %(turn)s)") % {"own": own, "turn": obj.turn_tokens_used or 0})

    @admin.display(description=_("cost"))
    def cost(self, obj: Run) -> str:
        """The run's own cost; on a turn's root run, the whole turn's too (from the ledger)."""
        own = cost_text(getattr(obj, "own_cost", None))
        if obj.root_id is not None:
            return own
        turn = cost_text(getattr(obj, "tree_cost", None))
        return str(_("%(own)s (turn %(turn)s)") % {"own": own, "turn": turn})

    @admin.display(description=_("duration"))
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
        trace = trace_build(runs=runs, costs=costs, current=getattr(run, "pk", None))
        tree = [
            {
                "run": r,
                "indent": r.depth * 1.5,
                "duration": duration_text(r),
                "tokens": (r.usage or {}).get("total_tokens", 0),
                "cost": cost_text(costs.get(r.pk)),
                "current": r.pk == getattr(run, "pk", None),
            }
            for r in runs
        ]
        extra = {
            "tree": tree,
            "trace": trace,
            "turn_cost": cost_text(turn_cost(root_id=run.root_id_or_self) if run else 0),
            "routing": runs[0].routing if runs else None,  # the root's decision
            "trace_url": trace_url(run.root_id_or_self, run.id) if run else "",
        }
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Runs start from chat, not from admin."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Read-only."""
        return False


def _depth_first(runs: list[Run], root_id: Any) -> list[Run]:
    children: dict[Any, list[Run]] = {}
    for run in runs:
        children.setdefault(run.parent_id, []).append(run)
    ordered: list[Run] = []
    stack = list(reversed(children.get(root_id, [])))
    while stack:
        current = stack.pop()
        ordered.append(current)
        stack.extend(reversed(children.get(current.pk, [])))
    return ordered
