"""Knowledge fixtures: knowledge bases, uploads indexed on commit, and a finance/HR corpus."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Group

from agents.knowledge.models import Document, KnowledgeBase
from agents.knowledge.services import document_upload, knowledge_base_create
from tests.factories import make_agent, make_user


@pytest.fixture(autouse=True)
def _sync_tasks(settings):
    """Indexing runs on commit in the test's thread: deterministic."""
    settings.TASKS_RUN_SYNC = True


@pytest.fixture
def kb(db) -> KnowledgeBase:
    """An empty knowledge base, "hr" (tests that need another name or agents define their own)."""
    return knowledge_base_create(name="hr")


@pytest.fixture
def upload(django_capture_on_commit_callbacks):
    """Upload bytes (or text) to a knowledge base and run the indexing it queues."""

    def do(kb: KnowledgeBase, filename: str, content: str | bytes, **fields: Any) -> Document:
        data = content.encode() if isinstance(content, str) else content
        with django_capture_on_commit_callbacks(execute=True):
            document = document_upload(kb=kb, filename=filename, data=data, **fields)
        document.refresh_from_db()
        return document

    return do


FINANCE_REPORT = """# 2026年第三季財務報告

## 營收
本季營收為新台幣一億二千萬元，較上季成長百分之八。

## 費用
差旅與行銷費用合計三千萬元，財務部將於十月底完成稽核。
"""

HR_RULES = """# 人資假勤規定

## 特休
到職滿六個月者給予特休三日；滿一年者給予特休七日。

## 病假
病假全年以三十日為限，超過三日須附醫療證明。

## 事假
事假全年以十四日為限，事假不給薪。
"""

DECOYS = [
    ("decoy-weather.md", "天氣預報", "# 天氣\n\n明天台北多雲，午後有雷陣雨，氣溫二十八度。"),
    ("decoy-lunch.md", "午餐菜單", "# 菜單\n\n週一供應牛肉麵與燙青菜，週二供應咖哩飯。"),
    ("decoy-it.md", "IT notes", "# VPN\n\nConnect to the VPN before opening the intranet wiki."),
    ("decoy-sports.md", "運動會", "# 運動會\n\n公司運動會於十一月舉行，項目包括接力賽與拔河。"),
]


@pytest.fixture
def corpus(db, upload):
    """Finance and HR knowledge bases (finance readable by one group), agents, decoys."""
    finance_group = Group.objects.create(name="finance-readers")
    finance_agent = make_agent("finance")
    hr_agent = make_agent("hr")
    finance = knowledge_base_create(
        name="finance", access_group=finance_group, agents=[finance_agent]
    )
    hr = knowledge_base_create(name="hr", agents=[hr_agent])
    docs = {
        "q3": upload(finance, "q3.md", FINANCE_REPORT, title="2026年第三季財務報告"),
        "rules": upload(hr, "leave.md", HR_RULES, title="人資假勤規定"),
    }
    for filename, title, text in DECOYS:
        upload(hr, filename, text, title=title)
        upload(finance, "f-" + filename, text + "\n\n(finance copy)", title=title)
    reader = make_user("reader")
    reader.groups.add(finance_group)
    return {
        "finance": finance,
        "hr": hr,
        "finance_agent": finance_agent,
        "hr_agent": hr_agent,
        "group": finance_group,
        "reader": reader,
        "docs": docs,
    }
