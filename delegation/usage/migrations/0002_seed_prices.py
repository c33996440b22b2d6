"""Seed the price table with OpenAI's standard prices (USD per million tokens; see seed.py)."""

from datetime import UTC, datetime
from decimal import Decimal

from django.db import migrations

SOURCE = "platform.openai.com/docs/pricing, standard tier (as of 2026-06)"
PRICES = [  # model, valid from, input, cached input, output
    ("gpt-4o-mini", "2024-07-18", "0.15", "0.075", "0.60"),
    ("gpt-4o", "2024-10-02", "2.50", "1.25", "10.00"),
    ("gpt-4.1-mini", "2025-04-14", "0.40", "0.10", "1.60"),
    ("gpt-4.1", "2025-04-14", "2.00", "0.50", "8.00"),
]


def seed(apps, schema_editor):
    ModelPrice = apps.get_model("usage", "ModelPrice")
    for model, start, inp, cached, out in PRICES:
        ModelPrice.objects.get_or_create(
            provider="openai",
            model=model,
            currency="USD",
            valid_from=datetime.fromisoformat(start).replace(tzinfo=UTC),
            defaults={
                "input_per_million": Decimal(inp),
                "cached_input_per_million": Decimal(cached),
                "output_per_million": Decimal(out),
                "source": SOURCE,
            },
        )


def unseed(apps, schema_editor):
    ModelPrice = apps.get_model("usage", "ModelPrice")
    for model, start, *_ in PRICES:
        ModelPrice.objects.filter(
            provider="openai",
            model=model,
            currency="USD",
            valid_from=datetime.fromisoformat(start).replace(tzinfo=UTC),
            source=SOURCE,
        ).delete()


class Migration(migrations.Migration):
    dependencies = [("usage", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
