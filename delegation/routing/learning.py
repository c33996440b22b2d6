"""Routing that learns: an entry agent's figures per expert and intent over the window (one
indexed read per turn), as the router model reads them, and what they change when a policy
turns learning on (ties broken, an expert below the threshold asked after the others)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import Sum
from django.utils import timezone
from django.utils.translation import gettext

from agents.models import Agent
from delegation.routing.models import Learning, RoutingPolicy, RoutingStat

FIGURES_RECORDED = 30  # figures kept on a decision at most (experts × intents)


@dataclass(frozen=True)
class Figure:
    """How one expert did for one intent over the window."""

    expert: str
    intent: str
    turns: int  # delegations
    good: int  # validated or rated up
    judged: int  # good + failed validation + rated down
    succeeded: int

    @property
    def rate(self) -> float:
        """The share of good answers among those judged (else of delegations that succeeded)."""
        if self.judged > 0:
            return self.good / self.judged
        return self.succeeded / self.turns if self.turns else 0.0

    def counts(self, policy: RoutingPolicy) -> bool:
        """Whether there are enough turns for the figure to count."""
        return self.turns >= max(1, policy.learning_min_turns)

    def below(self, policy: RoutingPolicy) -> bool:
        """Whether this expert is below the policy's threshold for this intent."""
        return self.counts(policy) and self.rate * 100 < policy.learning_threshold

    def as_dict(self, policy: RoutingPolicy) -> dict[str, Any]:
        """As recorded on a decision."""
        shown = asdict(self) | {"rate": round(self.rate * 100)}
        return shown | {"counts": self.counts(policy), "below": self.below(policy)}


def learning_figures(*, entry: str) -> list[Figure]:
    """The entry agent's figures per expert and intent over the window: one query on the
    statistics' unique index (entry agent first)."""
    since = timezone.now().date() - timedelta(days=settings.ROUTING_STATS_WINDOW_DAYS)
    rows = (
        RoutingStat.objects.filter(entry=entry, day__gte=since)
        .values("expert", "intent")
        .annotate(
            turns=Sum("delegations"),
            passed=Sum("validation_passed"),
            failed=Sum("validation_failed"),
            up=Sum("rated_up"),
            down=Sum("rated_down"),
            ok=Sum("succeeded"),
        )
        .order_by("expert", "intent")
    )
    figures = []
    for row in rows:
        good, bad = max(0, row["passed"] + row["up"]), max(0, row["failed"] + row["down"])
        figures.append(
            Figure(row["expert"], row["intent"], row["turns"], good, good + bad, row["ok"])
        )
    return figures


def figure_of(figures: list[Figure], expert: str, intent: str) -> Figure | None:
    """The figure of one expert for one intent, if it has any."""
    return next((f for f in figures if f.expert == expert and f.intent == intent), None)


def prior_lines(figures: list[Figure], targets: list[Agent]) -> list[str]:
    """The router model's lines: "hr (HR expert): 92 % good on leave (24 turns), 40 % on
    payroll (10 turns)" for each expert with figures (English, as the rest of its prompt)."""
    lines = []
    for agent in targets:
        own = [f for f in figures if f.expert == agent.name and f.turns]
        if not own:
            continue
        parts = [f"{round(f.rate * 100)} % on {f.intent} ({f.turns} turns)" for f in own]
        parts[0] = parts[0].replace(" % on ", " % good on ", 1)
        lines.append(f"- {agent.name} ({agent.display_name}): {', '.join(parts)}")
    return lines


def learning_order(
    candidates: list[Agent], figures: list[Figure], intent: str, policy: RoutingPolicy
) -> list[Agent]:
    """Candidates equally fit by the rules (each mentioned by the message) in the order learning
    asks them: those below the threshold last, then the better figure first, then as given."""

    def key(item: tuple[int, Agent]) -> tuple[bool, float, int]:
        index, agent = item
        figure = figure_of(figures, agent.name, intent)
        counted = figure is not None and figure.counts(policy)
        below = figure is not None and figure.below(policy)
        return below, -(figure.rate if counted and figure else 0.5), index

    return [agent for _, agent in sorted(enumerate(candidates), key=key)]


def learning_record(
    *, policy: RoutingPolicy, figures: list[Figure], intent: str, targets: list[Agent]
) -> dict[str, Any]:
    """What a decision records of learning: its mode and settings, and the figures it used
    (those of the experts it could ask; this intent's first)."""
    names = {a.name for a in targets}
    used = sorted(
        (f for f in figures if f.expert in names),
        key=lambda f: (f.intent != intent, f.expert, f.intent),
    )
    return {
        "mode": policy.learning,
        "intent": intent,
        "window_days": settings.ROUTING_STATS_WINDOW_DAYS,
        "threshold": policy.learning_threshold,
        "min_turns": policy.learning_min_turns,
        "figures": [f.as_dict(policy) for f in used[:FIGURES_RECORDED]],
        "changed": "",
    }


def learning_changed(
    record: dict[str, Any], *, before: Agent | None, after: Agent, figure: Figure | None
) -> str:
    """Why learning chose `after` (recorded, and added to the decision's reason)."""
    if before is None or figure is None:
        words = gettext("Learning broke a tie: %(expert)s has the better figures.") % {
            "expert": after.display_name
        }
    else:
        words = gettext(
            "Learning: %(expert)s is below the threshold on “%(intent)s” (%(rate)s %% of "
            "%(turns)s turns), so %(other)s is asked first."
        ) % {
            "expert": before.display_name,
            "intent": figure.intent,
            "rate": round(figure.rate * 100),
            "turns": figure.turns,
            "other": after.display_name,
        }
    record["changed"] = words
    return words


def learning_on(policy: RoutingPolicy | None) -> bool:
    """Whether the policy lets the figures change the choice."""
    return policy is not None and policy.learning == Learning.ON
