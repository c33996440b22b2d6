"""Template filters for costs: `{{ cost|money:currency }}` shows US$0.0034, not 0.0034000000."""

from __future__ import annotations

from decimal import Decimal

from django import template
from django.conf import settings

from delegation.usage.money import money_display

register = template.Library()


@register.filter
def money(value: Decimal | str | None, currency: str | None = None) -> str:
    """A cost for people to read, in `currency` (the platform's when not given)."""
    return money_display(value, currency or settings.USAGE_CURRENCY)
