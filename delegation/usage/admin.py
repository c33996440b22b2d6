"""Admin for usage: the price table (history kept), the read-only ledger with unpriced calls
flagged, budgets, spend counters, and the cost dashboard."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from delegation.usage.chart import stacked_cost_chart
from delegation.usage.models import Budget, ModelPrice, SpendCounter, UsageRecord
from delegation.usage.money import money_display
from delegation.usage.selectors import (
    budget_refusals,
    report_period,
    usage_by_day_and_agent,
    usage_report,
    usage_top_turns,
    usage_total,
    usage_unpriced_models,
)


@admin.register(ModelPrice)
class ModelPriceAdmin(admin.ModelAdmin):
    """Prices per million tokens. A price that has priced calls is history: it cannot be
    changed or deleted; a new row with a later "valid from" replaces it from then on."""

    list_display = [
        "model",
        "provider",
        "input_per_million",
        "cached_input_per_million",
        "output_per_million",
        "currency",
        "valid_from",
        "source",
    ]
    list_filter = ["provider", "currency", "model"]
    search_fields = ["model"]
    ordering = ["provider", "model", "-valid_from"]

    def _used(self, obj: ModelPrice | None) -> bool:
        return obj is not None and UsageRecord.objects.filter(price=obj).exists()

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Prices that priced calls are read-only (history)."""
        return super().has_change_permission(request, obj) and not self._used(obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Prices that priced calls cannot be deleted (history)."""
        return super().has_delete_permission(request, obj) and not self._used(obj)

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """Warns about models called without a price in the last 30 days."""
        start, end = report_period(None, None, timezone.localdate())
        unpriced = usage_unpriced_models(start=start, end=end)
        if unpriced and request.method == "GET":
            names = ", ".join(
                _("%(model)s (%(calls)s calls)")
                % {"model": f"{u['provider']}/{u['model']}", "calls": u["calls"]}
                for u in unpriced
            )
            messages.warning(
                request,
                _(
                    "Models used in the last 30 days without a price (counted as 0): %(names)s. "
                    "Add a price for each so their cost is counted."
                )
                % {"names": names},
            )
        return super().changelist_view(request, extra_context)


class PricedFilter(admin.SimpleListFilter):
    """Calls of models with no price (counted as 0)."""

    title = gettext_lazy("price known")
    parameter_name = "priced"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        """Yes / no."""
        return [("yes", _("yes")), ("no", _("no: unknown model, cost 0"))]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        """Filter on `priced`."""
        if self.value() in ("yes", "no"):
            return queryset.filter(priced=self.value() == "yes")
        return queryset


@admin.register(UsageRecord)
class UsageRecordAdmin(admin.ModelAdmin):
    """The ledger: one row per model call, append-only (read-only here)."""

    list_display = [
        "created_at",
        "user",
        "agent_name",
        "depth",
        "model",
        "prompt_tokens",
        "cached_tokens",
        "completion_tokens",
        "cost_text",
        "run_link",
    ]
    list_filter = [PricedFilter, "usage_reported", "provider", "model", "agent_name", "day"]
    search_fields = ["agent_name", "model", "user__username", "=run__id", "=root__id"]
    date_hierarchy = "created_at"
    list_select_related = ["user"]
    change_list_template = "admin/usage/usagerecord/change_list.html"

    @admin.display(description=gettext_lazy("cost"), ordering="cost")
    def cost_text(self, obj: UsageRecord) -> str:
        """The cost in its currency (US$0.0042); calls of unknown models are flagged."""
        if not obj.priced:
            return format_html(
                '<strong class="run-error" title="{}">{}</strong>',
                _("No price for %(model)s when called") % {"model": f"{obj.provider}/{obj.model}"},
                _("0 (unknown model)"),
            )
        return money_display(obj.cost, obj.currency)

    @admin.display(description=gettext_lazy("run"))
    def run_link(self, obj: UsageRecord) -> str:
        """The run (and so its turn) in the runs admin."""
        url = reverse("admin:delegation_run_change", args=[obj.run_id])
        return format_html('<a href="{}">{}</a>', url, _("step %(step)s") % {"step": obj.step})

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Rows come from model calls only."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Append-only."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Append-only."""
        return False

    def get_urls(self) -> list[Any]:
        """Adds the dashboard."""
        dashboard = path(
            "dashboard/",
            self.admin_site.admin_view(self.dashboard_view),
            name="usage_dashboard",
        )
        return [dashboard, *super().get_urls()]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        """Cost per day stacked by agent, totals per day, agent, user and session, the costliest
        turns with their trees, unpriced models and budget refusals."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = PeriodForm(request.GET or None)
        chosen = form.cleaned_data if form.is_valid() else {}
        start, end = report_period(chosen.get("start"), chosen.get("end"), timezone.localdate())
        currency = settings.USAGE_CURRENCY
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Usage and cost"),
            "form": form,
            "start": start,
            "end": end,
            "totals": usage_total(start=start, end=end),
            "chart": stacked_cost_chart(
                usage_by_day_and_agent(start=start, end=end), start, end, currency
            ),
            "tables": [
                (label, column, usage_report(group_by=group, start=start, end=end)[:limit])
                for label, column, group, limit in (
                    (_("Per day"), _("day"), "day", 400),
                    (_("Per agent"), _("agent"), "agent", 50),
                    (_("Per user"), _("user"), "user", 50),
                    (_("Per session"), _("chat session"), "session", 20),
                    (_("Per model"), _("model"), "model", 50),
                )
            ],
            "turns": usage_top_turns(start=start, end=end),
            "unpriced": usage_unpriced_models(start=start, end=end),
            "refusals": budget_refusals(start=start, end=end),
        }
        return TemplateResponse(request, "admin/usage/dashboard.html", context)


class PeriodForm(forms.Form):
    """The dashboard's period (default: the last 30 days)."""

    start = forms.DateField(required=False, label=gettext_lazy("from"))
    end = forms.DateField(required=False, label=gettext_lazy("to"))

    def clean(self) -> dict[str, Any]:
        """`from` on or before `to`, within the longest period a report covers."""
        data = super().clean() or {}
        try:
            report_period(data.get("start"), data.get("end"), timezone.localdate())
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
        return data


@admin.register(Budget)
class BudgetAdmin(admin.ModelAdmin):
    """Money caps per user or agent per day or month (over the environment's defaults)."""

    list_display = ["__str__", "scope", "period", "user", "agent", "max_cost", "note"]
    list_filter = ["scope", "period"]
    raw_id_fields = ["user"]
    search_fields = ["user__username", "agent__name", "note"]


@admin.register(SpendCounter)
class SpendCounterAdmin(admin.ModelAdmin):
    """What each budget's scope spent (a turn, a user's or agent's day or month); read-only."""

    list_display = ["key", "scope", "spent", "currency", "updated_at"]
    list_filter = ["scope", "currency"]
    search_fields = ["key"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Counters follow the ledger."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Counters follow the ledger."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Deleting one would forget what its budget's scope spent."""
        return False
