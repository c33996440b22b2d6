"""Reading a finding, and the offline model's finding from tool results (English and Chinese,
either script); an idle tick costs the same few queries however many watches exist."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from reminders.watches.checks import watches_tick
from reminders.watches.findings import MARKER, check_text, finding_parse, offline_finding
from reminders.watches.models import Watch
from reminders.watches.services import watch_save
from tests.watches.conftest import CREATED


def test_a_finding_is_read_from_words_around_it():
    finding = finding_parse(
        'Here it is:\n```json\n{"found": true, "title": "INV-7", "severity": "critical"}\n```'
    )
    assert (finding.found, finding.title, finding.severity, finding.key) == (
        True,
        "INV-7",
        "critical",
        "INV-7",  # the title when no key is given
    )
    assert finding_parse('{"found": false}').found is False


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("nothing to report", "no JSON"),
        ('{"found": true, "title": "x", "severity": "warning"', "no JSON"),
        ('{"found": "no"}', "“found”"),
        ('{"found": true, "severity": "info"}', "title"),
        ('{"found": true, "title": "x", "severity": "high"}', "Severity"),
    ],
)
def test_a_malformed_finding_says_why(answer, reason):
    with pytest.raises(ValueError, match=reason):
        finding_parse(answer)


def test_the_same_finding_has_the_same_digest_and_a_changed_one_another():
    one = finding_parse('{"found": true, "title": "A", "key": "k", "severity": "info"}')
    same = finding_parse('{"found": true, "title": "A", "key": "k", "severity": "info"}')
    changed = finding_parse('{"found": true, "title": "A", "key": "k", "severity": "warning"}')
    assert one.digest == same.digest != changed.digest


def _messages(check: str, items: list[dict]) -> list[dict]:
    result = {"ok": True, "result": {"structured": {"invoices": items}}}
    return [
        {"role": "system", "content": "You are finance."},
        {"role": "user", "content": check_text(check)},
        {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "t"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps(result)},
    ]


@pytest.mark.parametrize(
    "check",
    [
        "Look for unpaid invoices overdue by more than 30 days",
        "找出逾期超過30天的未付發票",
        "找出逾期超过30天的未付发票",
        "30天以上未付的發票",
    ],
)
def test_the_offline_finding_keeps_records_older_than_the_days_said(check):
    today = timezone.localdate()
    items = [
        {"number": "INV-1", "issued": (today - timedelta(days=45)).isoformat()},
        {"number": "INV-2", "issued": (today - timedelta(days=10)).isoformat()},
    ]
    finding = finding_parse(offline_finding(_messages(check, items)))
    assert finding.found and "INV-1" in finding.title and "INV-2" not in finding.title
    again = finding_parse(offline_finding(_messages(check, list(reversed(items)))))
    assert again.key == finding.key  # the same records, the same key


def test_the_offline_finding_is_nothing_when_no_record_is_old_enough():
    items = [{"number": "INV-2", "issued": timezone.localdate().isoformat()}]
    answer = offline_finding(_messages("overdue by more than 30 days", items))
    assert finding_parse(answer).found is False


def test_a_message_that_is_not_a_check_gets_no_offline_finding():
    messages = _messages("anything", [])
    messages[1]["content"] = "What invoices are unpaid?"
    assert MARKER not in messages[1]["content"] and offline_finding(messages) is None


@pytest.mark.django_db
def test_an_idle_tick_costs_the_same_queries_for_1_or_20_watches(
    expert, entry, django_assert_max_num_queries
):
    for index in range(20):
        watch = Watch(name=f"w{index}", agent=expert, prompt="x", schedule="每天早上9点")
        watch_save(watch=watch, now=CREATED)
    # The watches, ended checks, held notifications (and its transaction's savepoint pair).
    with django_assert_max_num_queries(5):
        watches_tick(now=CREATED + timedelta(minutes=1))
