"""Decompression bombs are refused before their parser does the work, each limit at its edge:
what a .docx unpacks to and how many files it holds (checked in its zip directory before
python-docx opens it), paragraphs of every format, PDF pages and PDF streams."""

from __future__ import annotations

import io
import tracemalloc
import zipfile

import pytest
from lxml import etree

from agents.knowledge.limits import Limits
from agents.knowledge.models import DocumentStatus
from agents.knowledge.parsing import ParseError, parse
from agents.knowledge.services import knowledge_base_create
from tests.knowledge import bombs
from tests.knowledge.files import docx_file, pdf_with_text

LIMITS = Limits(
    unpacked_bytes=50 * 2**20,
    zip_entries=1000,
    xml_elements=1_000_000,
    paragraphs=50_000,
    pdf_pages=2000,
)


def limits(**changed: int) -> Limits:
    return Limits(**{**LIMITS.__dict__, **changed})


def forbid_python_docx(monkeypatch) -> None:
    """From now on, python-docx opening a file fails the test (the bomb is made before)."""

    def refuse(*args, **kwargs):
        raise AssertionError("python-docx opened a file that should have been refused")

    monkeypatch.setattr("docx.Document", refuse)


@pytest.mark.django_db
def test_the_docx_of_100k_empty_paragraphs_fails_before_python_docx_opens_it(upload, monkeypatch):
    """The issue's bomb held a worker 160 s (114 s here before the fix): python-docx built
    its tree. Now the paragraphs are counted while streaming, and python-docx never opens it."""
    kb = knowledge_base_create(name="hr")
    data = bombs.docx_of_empty_paragraphs(100_000)
    assert len(data) < 50_000
    forbid_python_docx(monkeypatch)
    document = upload(kb, "bomb.docx", data)
    assert document.status == DocumentStatus.FAILED
    assert "KNOWLEDGE_MAX_PARAGRAPHS" in document.status_detail


def test_docx_paragraphs_are_counted_empty_ones_included_at_the_edge(monkeypatch):
    data = bombs.docx_of_empty_paragraphs(9)  # (python-docx's template has no paragraph)
    forbid_python_docx(monkeypatch)
    with pytest.raises(ParseError, match="more than 8 paragraphs"):
        parse(data, "docx", limits(paragraphs=8))


def test_nine_empty_paragraphs_pass_a_limit_of_nine():
    with pytest.raises(ParseError, match="no text"):  # read, and found empty
        parse(bombs.docx_of_empty_paragraphs(9), "docx", limits(paragraphs=9))


def test_a_docx_of_two_million_tiny_elements_is_refused_before_python_docx_opens_it(
    monkeypatch,
):
    """No paragraph at all, so no paragraph limit: 100 KB that a tree holds in 250 MB."""
    data = bombs.docx_of_tiny_elements(2_000_000)
    assert len(data) < 200_000
    forbid_python_docx(monkeypatch)
    with pytest.raises(ParseError, match=r"more than 1,000,000 elements.*MAX_XML_ELEMENTS"):
        parse(data, "docx", LIMITS)


def test_xml_elements_of_a_docx_at_the_edge():
    data = docx_file("Policy", {"Taxis": ["Taxi receipts are required."]})
    archive = zipfile.ZipFile(io.BytesIO(data))
    elements = sum(
        sum(1 for _ in etree.fromstring(archive.read(entry)).iter())
        for entry in archive.namelist()
        if entry.endswith((".xml", ".rels"))
    )
    assert parse(data, "docx", limits(xml_elements=elements))
    with pytest.raises(ParseError, match="KNOWLEDGE_MAX_XML_ELEMENTS"):
        parse(data, "docx", limits(xml_elements=elements - 1))


def test_a_zip_declaring_more_than_the_limit_is_refused_before_python_docx_opens_it(
    monkeypatch,
):
    forbid_python_docx(monkeypatch)
    with pytest.raises(ParseError, match=r"unpacks to 4,000,000,000 bytes.*MAX_UNPACKED_BYTES"):
        parse(bombs.zip_declaring(4_000_000_000), "docx", LIMITS)


def test_what_a_docx_unpacks_to_at_the_edge():
    data = docx_file("Policy", {"Taxis": ["Taxi receipts are required."]})
    unpacked = sum(e.file_size for e in zipfile.ZipFile(io.BytesIO(data)).infolist())
    assert parse(data, "docx", limits(unpacked_bytes=unpacked))
    with pytest.raises(ParseError, match="KNOWLEDGE_MAX_UNPACKED_BYTES"):
        parse(data, "docx", limits(unpacked_bytes=unpacked - 1))


def test_a_zip_of_too_many_files_is_refused_before_python_docx_opens_it(monkeypatch):
    forbid_python_docx(monkeypatch)
    with pytest.raises(ParseError, match=r"1,001 files; the limit is 1,000"):
        parse(bombs.zip_of_entries(1001), "docx", LIMITS)


def test_an_entry_understating_its_size_is_never_inflated_past_it():
    """zipfile's read() would inflate all 50 MB in one call, whatever the directory says."""
    data = bombs.zip_understating(actual=50 * 2**20, declared=1024)
    tracemalloc.start()
    try:
        with pytest.raises(ParseError, match="damaged"):
            parse(data, "docx", LIMITS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 5 * 2**20, f"peak {peak / 2**20:.1f} MB"


def test_pdf_pages_at_the_edge():
    data = pdf_with_text("one", "two", "three")
    assert len(parse(data, "pdf", limits(pdf_pages=3))) == 3
    with pytest.raises(ParseError, match=r"3 pages; the limit is 2 \(KNOWLEDGE_MAX_PDF_PAGES\)"):
        parse(data, "pdf", limits(pdf_pages=2))


def test_a_pdf_of_2001_pages_is_refused_by_default_settings():
    with pytest.raises(ParseError, match="2,001 pages; the limit is 2,000"):
        parse(bombs.pdf_of_blank_pages(2001), "pdf")


def test_a_pdf_page_tree_far_past_the_limit_is_refused_before_it_is_walked():
    with pytest.raises(ParseError, match="safety limit.*page tree"):
        parse(bombs.pdf_of_blank_pages(50), "pdf", limits(pdf_pages=10))


def test_a_pdf_stream_inflating_past_the_limit_is_refused():
    data = bombs.pdf_with_inflating_page(2 * 2**20)
    assert len(data) < 10_000
    with pytest.raises(ParseError, match="safety limit.*KNOWLEDGE_MAX_UNPACKED_BYTES"):
        parse(data, "pdf", limits(unpacked_bytes=2**20))


@pytest.mark.parametrize(
    ("data", "file_type"),
    [
        (b"a\n\nb\n\nc", "txt"),
        (b"# h\n\na\n\nb", "md"),  # a heading counts
        (b"<h1>h</h1><p>a</p><p></p>", "html"),  # so do a heading and an empty block
    ],
    ids=["txt", "md", "html"],
)
def test_paragraphs_of_text_formats_at_the_edge(data, file_type):
    assert parse(data, file_type, limits(paragraphs=3))
    with pytest.raises(ParseError, match="more than 2 paragraphs.*KNOWLEDGE_MAX_PARAGRAPHS"):
        parse(data, file_type, limits(paragraphs=2))


@pytest.mark.parametrize(
    ("data", "file_type"),
    [
        (b"a\n\n" * 3_500_000, "txt"),
        (b"# a\nb\n" * 1_700_000, "md"),
        (b"<p></p>" * 1_400_000, "html"),
    ],
    ids=["txt", "md", "html"],
)
def test_ten_megabytes_of_tiny_paragraphs_are_refused_at_the_limit(data, file_type):
    """5 to 13 s and up to 530 MB each before; now the parser stops at the limit (peaks of
    10-51 MB here, the input itself is 10 MB)."""
    tracemalloc.start()
    try:
        with pytest.raises(ParseError, match="KNOWLEDGE_MAX_PARAGRAPHS"):
            parse(data, file_type, LIMITS)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20, f"peak {peak / 2**20:.1f} MB"
