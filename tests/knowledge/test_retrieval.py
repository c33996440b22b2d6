"""Ranking in Chinese and English on the database in use (SQLite FTS5, or Postgres in the
Postgres pass): the right passage among decoys, two-character and one-character queries, 繁/简."""

from __future__ import annotations

import pytest

from agents.knowledge.retrieval import passages_search, postgres
from config.errors import AppError

pytestmark = pytest.mark.django_db


def ids(corpus) -> list[int]:
    return [corpus["finance"].pk, corpus["hr"].pk]


def top(corpus, query: str, **kw):
    return passages_search(kb_ids=ids(corpus), query=query, **kw)


def test_chinese_question_finds_the_chinese_passage_among_decoys(corpus):
    best = top(corpus, "病假超過幾天要附醫療證明？")[0]
    assert best.title == "人資假勤規定" and best.heading_path == ["人資假勤規定", "病假"]
    assert "醫療證明" in best.text and best.coverage > 0.5


@pytest.mark.parametrize(
    ("query", "title", "section"),
    [
        ("財務", "2026年第三季財務報告", None),
        ("人資", "人資假勤規定", None),
        ("假勤", "人資假勤規定", None),
        ("特休", "人資假勤規定", "特休"),
        ("事假", "人資假勤規定", "事假"),
        ("營收", "2026年第三季財務報告", "營收"),
    ],
)
def test_two_character_queries_match(corpus, query, title, section):
    best = top(corpus, query)[0]
    assert best.title == title
    if section:
        assert best.heading_path[-1] == section


def test_one_character_query_matches(corpus):
    assert top(corpus, "薪")[0].heading_path[-1] == "事假"


def test_simplified_query_finds_traditional_passage(corpus):
    best = top(corpus, "人资假勤规定 病假")[0]
    assert best.title == "人資假勤規定" and best.heading_path[-1] == "病假"
    assert "醫療證明" in top(corpus, "医疗证明")[0].text


def test_english_query_ranks_english_passage(corpus):
    best = top(corpus, "How do I connect to the VPN?")[0]
    assert best.title == "IT notes"


def test_search_only_sees_the_given_knowledge_bases(corpus):
    found = passages_search(kb_ids=[corpus["hr"].pk], query="財務報告 營收")
    assert all(p.kb == "hr" for p in found)
    assert passages_search(kb_ids=[], query="財務") == []


def test_top_k_bounds_the_answer(corpus):
    assert len(top(corpus, "週一 運動會 天氣 VPN 特休", top_k=2)) == 2


def test_unmatched_query_returns_nothing(corpus):
    assert top(corpus, "量子電腦 quantum") == []


@pytest.mark.parametrize("query", ["", "   ", "?!。，"])
def test_empty_query_is_refused(corpus, query):
    with pytest.raises(AppError) as caught:
        top(corpus, query)
    assert caught.value.code == "empty_query"


def test_huge_query_is_refused(corpus, settings):
    settings.KNOWLEDGE_MAX_QUERY_CHARS = 100
    assert top(corpus, "特休" * 50)  # exactly at the limit: searched
    with pytest.raises(AppError) as caught:
        top(corpus, "特休" * 50 + "假")
    assert caught.value.code == "query_too_long" and "100" in caught.value.message


BUDGET_REPORT = """# 第三季財務報告

## 營收
本季營收成長百分之八。

## 費用
費用增加百分之五。

## 預算
預算執行率為百分之九十三。各部門應於十月底前提交下一年度的需求，財務長將彙整後提交董事會審議，
並依各部門的執行狀況、人力需求、資本支出與專案時程調整分配，執行率偏低的部門需說明原因並提出改善計畫，
預算調整須經財務長核准後方可生效。

## 現金流
現金流入一億元。

## 展望
第四季持平。
"""


def test_the_title_weighs_alike_in_every_passage_so_the_passage_decides(kb, upload):
    """第三季预算: every passage of 第三季財務報告 has 第三季 in its title; the budget passage
    says 預算 (a word other documents use too), so it comes first, though it is the longest.
    Counted as words of every passage, the title made the short passages outrank it."""
    upload(kb, "q3.md", BUDGET_REPORT, title="第三季財務報告")
    for number in range(20):
        topic = "部門預算說明會" if number < 3 else "停車場整修"
        upload(kb, f"notice{number}.md", f"# 公告\n\n第{number}號公告：{topic}。")
    found = passages_search(kb_ids=[kb.pk], query="第三季预算", top_k=5)
    assert found[0].heading_path[-1] == "預算"


def test_a_title_word_alone_still_finds_the_document(kb, upload):
    upload(kb, "q3.md", BUDGET_REPORT, title="第三季財務報告")
    upload(kb, "lunch.md", "# 菜單\n\n週一供應牛肉麵。", title="午餐菜單")
    assert passages_search(kb_ids=[kb.pk], query="財務報告")[0].title == "第三季財務報告"


def test_a_common_word_finds_the_passage_it_weighs_most_in(kb, upload, monkeypatch):
    """Postgres ranks a bounded set of candidates: for a word in more chunks than that, the
    chunks where it weighs most (its impact levels), not the first ones stored."""
    monkeypatch.setattr(postgres, "CANDIDATES", 8)
    for number in range(40):
        upload(kb, f"memo{number}.md", f"# 備忘\n\n第{number}號備忘：本月預算照舊。")
    upload(kb, "budget.md", "# 預算\n\n預算編列、預算執行與預算調整，都以預算辦法為準。")
    found = passages_search(kb_ids=[kb.pk], query="預算", top_k=3)
    assert found[0].title == "budget"
