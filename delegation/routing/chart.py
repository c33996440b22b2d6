"""A small chart per expert (delegations per day, stacked: judged good, judged bad, not judged)
as plain SVG geometry, drawn by the admin's template: no script, no library."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from django.utils.translation import gettext

# Okabe-Ito colours (told apart by colour-blind readers) and a grey.
GOOD, BAD, UNJUDGED = "#009E73", "#D55E00", "#999999"
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 320, 90, 24, 16, 6


@dataclass(frozen=True)
class Bar:
    """One part of one day's bar."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str  # the tooltip


@dataclass
class ExpertChart:
    """One expert's chart: its bars, its highest day, its first and last day's labels."""

    expert: str
    width: int = WIDTH
    height: int = HEIGHT
    plot_left: int = LEFT
    plot_bottom: int = HEIGHT - BOTTOM
    bars: list[Bar] = field(default_factory=list)
    highest: int = 0
    first: str = ""
    last: str = ""


def expert_chart(expert: str, daily: list[dict[str, Any]], days: int, today: date) -> ExpertChart:
    """Bars for each of the last `days` days (`daily`: stats_daily's rows)."""
    chart = ExpertChart(expert=expert)
    start = today - timedelta(days=days - 1)
    by_day = {row["day"]: row for row in daily}
    chart.highest = max((_total(row) for row in daily), default=0)
    chart.first, chart.last = start.strftime("%m-%d"), today.strftime("%m-%d")
    slot = (WIDTH - LEFT - 4) / days
    scale = (chart.plot_bottom - TOP) / max(1, chart.highest)
    for index in range(days):
        day = start + timedelta(days=index)
        row = by_day.get(day)
        if not row or not row["delegations"]:
            continue
        good, bad = max(0, row["good"] or 0), max(0, row["bad"] or 0)
        parts = [(good, GOOD), (bad, BAD), (_total(row) - good - bad, UNJUDGED)]
        title = gettext(
            "%(day)s: %(count)s delegations, %(good)s judged good, %(bad)s judged bad"
        ) % {"day": day.isoformat(), "count": row["delegations"], "good": good, "bad": bad}
        base = float(chart.plot_bottom)
        x = LEFT + index * slot + slot * 0.1
        for count, colour in parts:
            if count:
                height = count * scale
                base -= height
                bar = Bar(
                    round(x, 2),
                    round(base, 2),
                    round(slot * 0.8, 2),
                    round(height, 2),
                    colour,
                    title,
                )
                chart.bars.append(bar)
    return chart


def _total(row: dict[str, Any]) -> int:
    """A day's bar: its delegations, or its judgements when more (a verdict and a rating)."""
    good, bad = max(0, row["good"] or 0), max(0, row["bad"] or 0)
    return max(row["delegations"] or 0, good + bad)
