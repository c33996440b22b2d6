"""The shared tokenizer: 繁/简 folding, CJK unigrams and bigrams, English words."""

from agents.knowledge.text import (
    coverage,
    index_terms,
    normalize,
    passage_index_text,
    query_terms,
)


def test_traditional_and_simplified_fold_to_one_form():
    assert normalize("人資假勤規定") == normalize("人资假勤规定")
    assert normalize("ＦＵＬＬ　Ｗｉｄｔｈ") == "full width"


def test_cjk_text_is_indexed_as_unigrams_and_bigrams():
    terms = index_terms("財務報告 Q3")
    assert {"财务", "务报", "报告", "财", "q3"} <= set(terms)


def test_two_character_query_is_one_term_and_long_runs_become_bigrams():
    assert query_terms("財務") == ["财务"]
    assert query_terms("假") == ["假"]
    assert query_terms("人資假勤") == ["人资", "资假", "假勤"]


def test_english_words_are_stemmed_alike_in_queries_and_passages():
    assert query_terms("What are the leave rules?") == ["leav", "rule"]
    assert query_terms("the") == ["the"]  # nothing else left: keep it
    assert set(query_terms("reimbursements")) <= set(index_terms("We reimburse travel."))


def test_coverage_counts_matched_terms():
    indexed = " ".join(index_terms("leave rules of HR"))
    assert coverage(query_terms("leave rules budget"), indexed) == 2 / 3


def test_a_passage_is_indexed_by_its_own_words_apart_from_its_title():
    indexed = passage_index_text("第三季財務報告", ["第三季財務報告", "預算"], "預算執行率九成")
    assert "财务" in indexed.title.split()
    assert "财务" not in indexed.words.split()  # nor from the heading that repeats the title
    assert "预算" in indexed.words.split()
    assert indexed.length == len(index_terms("預算 預算執行率九成"))


def test_coverage_counts_a_term_found_in_the_title():
    indexed = passage_index_text("Leave rules", [], "Ask HR first.")
    assert coverage(query_terms("leave rules hr"), indexed.words, indexed.title) == 1
