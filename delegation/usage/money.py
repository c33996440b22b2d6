"""Money as Decimal: the precision costs are kept at, rounding, and the API's decimal strings."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

COST_DIGITS = 20  # max_digits of every stored cost
COST_PLACES = 10  # decimal places of every stored cost: a token at $0.0001/M is still counted
PRICE_DIGITS = 14  # up to 99,999,999.999999 per million
PRICE_PLACES = 6  # prices per million tokens, e.g. 0.075000
MILLION = Decimal(1_000_000)
ZERO = Decimal(0)
_QUANTUM = Decimal(1).scaleb(-COST_PLACES)


def money(value: Decimal | int | str | None) -> Decimal:
    """The value as a cost: a Decimal rounded half-up to COST_PLACES (None is zero)."""
    if value is None:
        return ZERO.quantize(_QUANTUM)
    return Decimal(value).quantize(_QUANTUM, rounding=ROUND_HALF_UP)


def money_text(value: Decimal | int | str | None) -> str:
    """A cost as the decimal string clients receive: fixed COST_PLACES places, never a float."""
    return format(money(value), "f")


def money_short(value: Decimal | int | str | None) -> str:
    """A cost for people to read: no trailing zeros (17, 0.0034), never an exponent."""
    return format(money(value).normalize(), "f")
