"""Prices and costs: the price valid at a moment, what tokens cost, and a call's estimate."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.conf import settings

from agents.providers.base import ModelRequest
from delegation.usage.models import ModelPrice
from delegation.usage.money import MILLION, money

OFFLINE = "offline"  # the built-in model: free by nature, never "unknown"


@dataclass(frozen=True)
class Quote:
    """The price a call is made at: a price row, free (offline), or unknown (no row: cost 0)."""

    price: ModelPrice | None
    priced: bool

    def cost(self, *, prompt_tokens: int, cached_tokens: int, completion_tokens: int) -> Decimal:
        """What these tokens cost at this price (cached tokens are part of prompt_tokens)."""
        if self.price is None:
            return money(0)
        price = self.price
        cached = min(cached_tokens, prompt_tokens)
        cached_price = price.cached_input_per_million
        if cached_price is None:
            cached_price = price.input_per_million
        total = (
            (prompt_tokens - cached) * price.input_per_million
            + cached * cached_price
            + completion_tokens * price.output_per_million
        )
        return money(total / MILLION)


def price_at(*, provider: str, model: str, at: datetime) -> Quote:
    """The price of `model` valid at `at` in USAGE_CURRENCY: the latest row starting by then."""
    if provider == OFFLINE:
        return Quote(price=None, priced=True)
    price = next((row for row in _price_rows(provider, model) if row.valid_from <= at), None)
    return Quote(price=price, priced=price is not None)


# Every model call is priced before it is made, so the rows of a model are kept in this process
# for PRICE_CACHE_SECONDS: a saved or deleted price clears them here at once (signals), and other
# processes see the change within that time. The rows are newest first, future ones included.
_rows: dict[tuple[str, str, str], tuple[float, list[ModelPrice]]] = {}  # (read at, rows)
_rows_lock = threading.Lock()


def _price_rows(provider: str, model: str) -> list[ModelPrice]:
    key = (provider, model, settings.USAGE_CURRENCY)
    now = time.monotonic()
    cached = _rows.get(key)
    if cached is not None and now - cached[0] < settings.PRICE_CACHE_SECONDS:
        return cached[1]
    rows = list(
        ModelPrice.objects.filter(provider=provider, model=model, currency=key[2]).order_by(
            "-valid_from"
        )
    )
    with _rows_lock:
        _rows[key] = (now, rows)
    return rows


def prices_forget(**_: object) -> None:
    """Drop the prices kept in this process (a price was saved or deleted; a test ended)."""
    with _rows_lock:
        _rows.clear()


def estimate_tokens(text: str) -> int:
    """A generous token count without a tokenizer: 4 ASCII characters a token (rounded up),
    and a token for every other character (CJK, accented letters, symbols)."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return -(-ascii_chars // 4) + (len(text) - ascii_chars)


def estimate_prompt_tokens(request: ModelRequest) -> int:
    """The request's prompt as tokens: its messages and tool schemas as compact JSON, whose
    quotes and keys stand in for the chat format's per-message overhead."""
    text = json.dumps([request.messages, request.tools], ensure_ascii=False, separators=(",", ":"))
    return estimate_tokens(text)


def output_cap(request: ModelRequest) -> int:
    """The most output tokens the call may bring: the agent's max tokens, else
    USAGE_ESTIMATE_OUTPUT_TOKENS."""
    return request.max_tokens or settings.USAGE_ESTIMATE_OUTPUT_TOKENS


def model_name(*, provider: str, request: ModelRequest) -> str:
    """The model a call is recorded and priced under (the offline model is "offline")."""
    return OFFLINE if provider == OFFLINE else (request.model or settings.OPENAI_MODEL)
