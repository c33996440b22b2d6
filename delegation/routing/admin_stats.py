"""Admin for routing statistics: a table per entry agent, expert and intent with rates and
counts, filtered, and a small chart per expert (server-rendered SVG); read-only."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from delegation.routing.chart import expert_chart
from delegation.routing.models import RoutingStat
from delegation.routing.selectors import stats_daily, stats_filters, stats_rows

CHARTS = 12  # experts charted at most (the most delegated)


class StatsFilterForm(forms.Form):
    """The page's filters (each blank: all)."""

    entry = forms.ChoiceField(label=_("entry agent"), required=False)
    expert = forms.ChoiceField(label=_("expert"), required=False)
    intent = forms.ChoiceField(label=_("intent"), required=False)
    days = forms.IntegerField(label=_("days"), required=False, min_value=1, max_value=366)

    def __init__(self, *args: Any, choices: dict[str, list[str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, values in choices.items():
            field = self.fields[name]
            assert isinstance(field, forms.ChoiceField)
            field.choices = [("", _("all")), *((v, v) for v in values)]


@admin.register(RoutingStat)
class RoutingStatAdmin(admin.ModelAdmin):
    """The statistics page in place of a list of rows."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Counted by the platform only."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Counted by the platform only."""
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Counted by the platform only."""
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        """The table (rates with their counts) and a chart per expert, for the filters."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = StatsFilterForm(request.GET or None, choices=stats_filters())
        chosen = form.cleaned_data if form.is_valid() else {}
        days = chosen.get("days") or settings.ROUTING_STATS_WINDOW_DAYS
        filters = {k: chosen.get(k) or "" for k in ("entry", "expert", "intent")}
        rows = stats_rows(days=days, **filters)
        experts = list(dict.fromkeys(r["expert"] for r in rows))[:CHARTS]
        today = timezone.now().date()
        daily = stats_daily(entry=filters["entry"], intent=filters["intent"], days=days)
        charts = [expert_chart(e, daily.get(e, []), days, today) for e in experts]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": _("Routing statistics"),
            "form": form,
            "days": days,
            "rows": rows,
            "charts": charts,
        }
        return TemplateResponse(request, "admin/routing/stats.html", context)
