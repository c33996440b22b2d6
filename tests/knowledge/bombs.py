"""Hostile files made in memory: decompression bombs and files that once left documents queued."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import docx
from docx.oxml.ns import qn
from lxml import etree
from pypdf import PdfWriter

from tests.knowledge.files import pdf_of_objects

# Offsets of the uncompressed size in a zip's central directory header (signature PK\1\2).
_CENTRAL_HEADER = b"PK\x01\x02"
_CENTRAL_SIZE_AT = 24


def docx_of_empty_paragraphs(count: int = 100_000) -> bytes:
    """A valid Word document of `count` empty paragraphs (100,000 make about 37 KB)."""
    document = docx.Document()
    body = document.element.body
    last = body[-1]  # the section properties stay last
    for _ in range(count):
        last.addprevious(etree.Element(qn("w:p")))
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx_of_tiny_elements(count: int) -> bytes:
    """A valid Word document whose body holds `count` tiny elements that are no paragraphs
    (2 million make about 100 KB; a parser building their tree holds about 250 MB)."""
    blank = io.BytesIO()
    docx.Document().save(blank)
    template = zipfile.ZipFile(blank)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for entry in template.infolist():
            data = template.read(entry)
            if entry.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + b"<w:bookmarkEnd/>" * count, 1)
            archive.writestr(entry.filename, data)
    return bomb.getvalue()


def zip_declaring(size: int) -> bytes:
    """A small zip (named .docx by the tests) whose central directory says its one entry
    unpacks to `size` bytes (below 4 GiB)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", b"<w:document/>")
    return _declare_sizes(out.getvalue(), size)


def zip_understating(actual: int, declared: int = 1024) -> bytes:
    """A zip whose one entry inflates to `actual` zero bytes while its central directory says
    `declared`: a reader trusting the directory inflates far more than it checked."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", bytes(actual))
    return _declare_sizes(out.getvalue(), declared)


def zip_of_entries(count: int) -> bytes:
    """A zip of `count` tiny files."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for number in range(count):
            archive.writestr(f"word/media/part{number}.xml", b"<x/>")
    return out.getvalue()


def _declare_sizes(data: bytes, size: int) -> bytes:
    patched = bytearray(data)
    at = patched.find(_CENTRAL_HEADER)
    while at != -1:
        struct.pack_into("<I", patched, at + _CENTRAL_SIZE_AT, size)
        at = patched.find(_CENTRAL_HEADER, at + 4)
    return bytes(patched)


def pdf_of_blank_pages(count: int) -> bytes:
    """A valid PDF of `count` blank pages."""
    writer = PdfWriter()
    for _ in range(count):
        writer.add_blank_page(width=72, height=72)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_with_inflating_page(size: int) -> bytes:
    """A one-page PDF whose content stream shows text over `size` bytes, deflated (about 1 KB
    per MB): reading its text inflates all of it."""
    line = b"BT /F1 12 Tf 40 760 Td (a) Tj ET\n"
    stream = zlib.compress(line * (size // len(line) + 1), 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    return pdf_of_objects(objects)
