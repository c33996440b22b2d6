"""A stacked bar chart (cost per day, one colour per agent) as plain SVG geometry, drawn by a
template on the server: no script, no library, no CDN."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import ROUND_CEILING, Decimal

from django.utils.translation import gettext

from delegation.usage.money import ZERO, money_display

# Okabe-Ito colours (told apart by colour-blind readers), then greys for the rest.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442"]
OTHER_COLOUR = "#999999"
MAX_SERIES = len(PALETTE)  # agents beyond the costliest ones are stacked as "other agents"
WIDTH, HEIGHT = 760, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 12, 36


@dataclass(frozen=True)
class Bar:
    """One agent's part of one day's bar."""

    x: float
    y: float
    width: float
    height: float
    colour: str
    title: str  # the tooltip: day, agent and cost


@dataclass(frozen=True)
class Tick:
    """A labelled position on an axis."""

    position: float
    label: str


@dataclass
class Chart:
    """Everything the template draws."""

    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Bar] = field(default_factory=list)
    y_ticks: list[Tick] = field(default_factory=list)
    x_ticks: list[Tick] = field(default_factory=list)
    legend: list[tuple[str, str]] = field(default_factory=list)  # (colour, agent)
    plot_left: int = LEFT
    plot_right: int = WIDTH - RIGHT
    plot_bottom: int = HEIGHT - BOTTOM
    empty: bool = True


def nice_ceiling(value: Decimal) -> Decimal:
    """The smallest of 1, 2, 2.5, 5 times a power of ten that is at least `value`."""
    if value <= 0:
        return Decimal(1)
    power = Decimal(10) ** (value.adjusted())
    for step in (1, 2, Decimal("2.5"), 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover (the loop ends at 10 x power, always enough)


def stacked_cost_chart(
    costs: dict[tuple[date, str], Decimal], start: date, end: date, currency: str
) -> Chart:
    """Bars for every day from start to end, stacked by agent (the costliest agents get their
    own colour, the rest share grey), with a y axis in `currency`."""
    days = [start + timedelta(days=i) for i in range((end - start).days + 1)]
    by_agent: dict[str, Decimal] = {}
    for (_, agent), cost in costs.items():
        by_agent[agent] = by_agent.get(agent, ZERO) + cost
    ranked = sorted(by_agent, key=lambda a: (-by_agent[a], a))
    named = ranked[:MAX_SERIES] if len(ranked) <= MAX_SERIES else ranked[: MAX_SERIES - 1]
    series = [(a, PALETTE[i]) for i, a in enumerate(named)]
    other = gettext("other agents")
    if len(named) < len(ranked):
        series.append((other, OTHER_COLOUR))

    def series_of(agent: str) -> str:
        return agent if agent in named else other

    stacks: dict[date, dict[str, Decimal]] = {d: {} for d in days}
    for (day, agent), cost in costs.items():
        if day in stacks:
            stack = stacks[day]
            stack[series_of(agent)] = stack.get(series_of(agent), ZERO) + cost
    highest = max((sum(s.values(), ZERO) for s in stacks.values()), default=ZERO)
    step = nice_ceiling(highest / 4)  # at most four round steps up the axis
    top = step * max(Decimal(1), (highest / step).to_integral_value(rounding=ROUND_CEILING))
    chart = Chart(legend=[(colour, name) for name, colour in series])
    chart.empty = not costs
    _draw(chart, days, stacks, series, top, step, currency)
    return chart


def _draw(
    chart: Chart,
    days: list[date],
    stacks: dict[date, dict[str, Decimal]],
    series: list[tuple[str, str]],
    top: Decimal,
    step: Decimal,
    currency: str,
) -> None:
    plot_height = chart.plot_bottom - TOP
    slot = (chart.plot_right - chart.plot_left) / max(1, len(days))
    width = max(1.0, slot * 0.8)
    scale = float(plot_height) / float(top)
    for index, day in enumerate(days):
        x = chart.plot_left + index * slot + (slot - width) / 2
        base = float(chart.plot_bottom)
        for name, colour in series:
            cost = stacks[day].get(name)
            if not cost:
                continue
            height = float(cost) * scale
            base -= height
            title = f"{day.isoformat()} · {name}: {money_display(cost, currency)}"
            bar = Bar(round(x, 2), round(base, 2), round(width, 2), round(height, 2), colour, title)
            chart.bars.append(bar)
    for i in range(int(top / step) + 1):
        value = step * i
        label = money_display(value, currency) if i else "0"
        chart.y_ticks.append(Tick(round(chart.plot_bottom - float(value) * scale, 2), label))
    every = max(1, len(days) // 8)
    for index in range(0, len(days), every):
        centre = chart.plot_left + index * slot + slot / 2
        chart.x_ticks.append(Tick(round(centre, 2), days[index].strftime("%m-%d")))
