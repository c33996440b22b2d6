"""Text and headings out of every supported type, chunk bounds and overlap, unreadable files."""

from __future__ import annotations

import pytest

from agents.knowledge.chunking import chunk_blocks
from agents.knowledge.parsing import Block, ParseError, file_type_of, parse
from tests.knowledge.files import docx_file, pdf_with_text, pdf_without_text


def test_markdown_keeps_the_heading_path():
    blocks = parse(b"# Leave\n\nIntro.\n\n## Sick leave\n\nThirty days.\n\n# Pay\n\nMonthly.", "md")
    assert [(b.heading_path, b.text) for b in blocks] == [
        (("Leave",), "Intro."),
        (("Leave", "Sick leave"), "Thirty days."),
        (("Pay",), "Monthly."),
    ]


def test_html_drops_scripts_and_styles_and_keeps_headings():
    html = (
        "<html><head><title>t</title><style>p{}</style></head><body>"
        "<script>alert('x')</script><h1>規定</h1><p>特休 <b>七日</b></p>"
        "<h2>病假</h2><ul><li>三十日</li><li>附證明</li></ul></body></html>"
    )
    blocks = parse(html.encode(), "html")
    assert [(b.heading_path, b.text) for b in blocks] == [
        (("規定",), "特休 七日"),
        (("規定", "病假"), "三十日"),
        (("規定", "病假"), "附證明"),
    ]
    assert all("alert" not in b.text and "p{}" not in b.text for b in blocks)


def test_pdf_text_layer_is_read_per_page():
    blocks = parse(pdf_with_text("Expense policy\nTaxis need receipts.", "Page two text"), "pdf")
    assert blocks[0].heading_path == ("p. 1",) and "Taxis need receipts." in blocks[0].text
    assert blocks[-1].heading_path == ("p. 2",) and "Page two text" in blocks[-1].text


def test_pdf_without_text_layer_fails_with_a_reason():
    with pytest.raises(ParseError, match="no text layer"):
        parse(pdf_without_text(), "pdf")


def test_docx_headings_paragraphs_and_tables():
    data = docx_file(
        "Leave policy", {"Sick leave": ["Thirty days a year."]}, [["Type", "Days"], ["Annual", "7"]]
    )
    blocks = parse(data, "docx")
    assert Block(("Leave policy", "Sick leave"), "Thirty days a year.") in blocks
    assert Block(("Leave policy", "Sick leave"), "Annual | 7") in blocks


@pytest.mark.parametrize(
    ("data", "file_type", "reason"),
    [
        (b"%PDF-1.4 garbage", "pdf", "damaged"),
        (b"PK\x03\x04 not a zip", "docx", "damaged"),
        (b"\xff\xfa\x00\x01binary", "txt", "not UTF-8"),
        (b"text\x00with nul", "md", "binary"),
        (b"\n\n   \n", "txt", "no text"),
        (b"<html><script>only()</script></html>", "html", "no text"),
    ],
)
def test_unreadable_files_raise_a_clear_reason(data, file_type, reason):
    with pytest.raises(ParseError, match=reason):
        parse(data, file_type)


def test_file_types_by_extension():
    assert [
        file_type_of(n) for n in ["a.MD", "b.markdown", "c.htm", "d.docx", "e.exe", "noext"]
    ] == [
        "md",
        "md",
        "html",
        "docx",
        "",
        "",
    ]


def test_chunks_stay_within_bounds_and_overlap_inside_a_section():
    sentences = " ".join(f"Sentence number {i} is here." for i in range(60))
    blocks = [Block(("A",), sentences), Block(("B",), "Short section.")]
    chunks = chunk_blocks(blocks, max_chars=200, overlap=50)
    assert all(len(c.text) <= 200 for c in chunks)
    a_chunks = [c for c in chunks if c.heading_path == ("A",)]
    assert len(a_chunks) > 3
    for first, second in zip(a_chunks, a_chunks[1:], strict=False):
        assert second.text.split(" Sentence")[0] in first.text  # starts with the previous tail
    assert chunks[-1] == type(chunks[-1])(("B",), "Short section.")  # no overlap across sections


def test_long_chinese_paragraph_is_cut_at_sentence_ends():
    text = "。".join(f"第{i}條規定員工應遵守公司制度" for i in range(40)) + "。"
    chunks = chunk_blocks([Block(("規定",), text)], max_chars=120, overlap=20)
    assert all(len(c.text) <= 120 for c in chunks) and len(chunks) > 5
    assert all(c.text.endswith("。") for c in chunks)


def test_a_word_longer_than_the_limit_is_cut_anyway():
    chunks = chunk_blocks([Block((), "x" * 1000)], max_chars=300, overlap=0)
    assert [len(c.text) for c in chunks] == [300, 300, 300, 100]
