"""Seed prices: OpenAI's published standard-tier prices per million tokens, in USD.

Source: https://platform.openai.com/docs/pricing (the "Standard" text-token table), as
published since each model's launch; checked on 2026-11-22 against copies of that table dated
2026-03 to 2026-06 (the page itself was not reachable from the build machine).

`valid_from` is when the price took effect: gpt-4o-mini's launch (2024-07-18), the day the
`gpt-4o` alias moved to the $2.50/$10 snapshot gpt-4o-2024-08-06 (2024-10-02), and the GPT-4.1
family's launch (2025-04-14). A later change is a new row with a later valid_from.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

_SOURCE = "platform.openai.com/docs/pricing, standard tier (as of 2026-06)"


def _row(model: str, start: str, inp: str, cached: str, out: str) -> dict[str, Any]:
    return {
        "provider": "openai",
        "model": model,
        "currency": "USD",
        "valid_from": datetime.fromisoformat(start).replace(tzinfo=UTC),
        "input": Decimal(inp),
        "cached_input": Decimal(cached),
        "output": Decimal(out),
        "source": _SOURCE,
    }


SEED_PRICES: list[dict[str, Any]] = [
    _row("gpt-4o-mini", "2024-07-18", "0.15", "0.075", "0.60"),
    _row("gpt-4o", "2024-10-02", "2.50", "1.25", "10.00"),
    _row("gpt-4.1-mini", "2025-04-14", "0.40", "0.10", "1.60"),
    _row("gpt-4.1", "2025-04-14", "2.00", "0.50", "8.00"),
]
