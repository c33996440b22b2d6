"""Template filters for costs: `{{ cost|money }}` shows 0.0034, not 0.0034000000."""

from __future__ import annotations

from decimal import Decimal

from django import template

from delegation.usage.money import money_short

register = template.Library()


@register.filter
def money(value: Decimal | str | None) -> str:
    """A cost for people to read: no trailing zeros, never an exponent."""
    return money_short(value)
