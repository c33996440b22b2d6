"""Costs as people read them: the currency's symbol, cents from one unit up, two significant
digits below, in the page's language; never 0.0000000000."""

from __future__ import annotations

import pytest
from django.template import Context, Template
from django.utils import translation

from delegation.usage.money import money_display


@pytest.mark.parametrize(
    ("value", "currency", "shown"),
    [
        ("0.0042", "USD", "US$0.0042"),
        ("0.004213", "USD", "US$0.0042"),
        ("1.2", "TWD", "NT$1.20"),
        ("1234.5", "USD", "US$1,234.50"),
        ("0.05", "USD", "US$0.05"),
        ("0.0000540000", "USD", "US$0.000054"),
        ("0", "USD", "US$0.00"),
        (None, "EUR", "€0.00"),
        ("0.999", "USD", "US$1.00"),
        ("-0.3", "USD", "-US$0.30"),
        ("2.5", "XAF", "2.50 XAF"),  # a currency without a symbol keeps its code
    ],
)
def test_costs_read_as_money(value, currency, shown):
    assert money_display(value, currency) == shown


def test_the_template_filter_uses_the_rows_currency_or_the_platforms(settings):
    settings.USAGE_CURRENCY = "TWD"
    template = Template("{% load usage_money %}{{ a|money }} {{ b|money:'USD' }}")
    assert template.render(Context({"a": "12", "b": "0.0000000000"})) == "NT$12.00 US$0.00"


def test_the_number_follows_the_pages_language():
    with translation.override("de"):
        assert money_display("1234.5", "EUR") == "€1.234,50"
    with translation.override("zh-hant"):
        assert money_display("0.0042", "TWD") == "NT$0.0042"
