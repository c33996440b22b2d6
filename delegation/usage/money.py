"""Money as Decimal: the precision costs are kept at, rounding, and the API's decimal strings."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

from django.utils.formats import number_format

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


# How people write each currency's amounts; a currency not listed shows its ISO code.
SYMBOLS = {
    "USD": "US$",
    "TWD": "NT$",
    "HKD": "HK$",
    "CNY": "CN¥",
    "JPY": "JP¥",
    "EUR": "€",
    "GBP": "£",
}
SIGNIFICANT = 2  # an amount under one unit keeps two significant digits (US$0.0042)


def money_display(value: Decimal | int | str | None, currency: str) -> str:
    """A cost for people to read in the page's language: the currency's symbol, two places
    from one unit up (NT$1,234.50), two significant digits below (US$0.0042), never an exponent."""
    amount = money(value)
    magnitude = abs(amount)
    places = 2
    if 0 < magnitude < 1:
        places = min(COST_PLACES, max(2, SIGNIFICANT - 1 - magnitude.adjusted()))
    rounded = magnitude.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP)
    exponent = rounded.normalize().as_tuple().exponent
    if isinstance(exponent, int):
        places = max(2, -exponent)  # 0.050 reads as 0.05
    number = number_format(rounded, decimal_pos=places, use_l10n=True, force_grouping=True)
    symbol = SYMBOLS.get(currency)
    text = f"{symbol}{number}" if symbol else f"{number} {currency}"
    return f"-{text}" if amount < 0 else text
