"""Bounds on what an uploaded file may unpack to, applied before a parser inflates it: a
decompression bomb is refused in milliseconds instead of holding a worker for minutes."""

from __future__ import annotations

import io
import shutil
import zipfile
import zlib
from contextlib import AbstractContextManager
from dataclasses import dataclass

from django.conf import settings

# Each read inflates at most this much, so an entry is never inflated past its declared size.
_READ_BYTES = 64 * 1024


@dataclass(frozen=True)
class Limits:
    """How much a file may unpack to (the KNOWLEDGE_MAX_* settings)."""

    unpacked_bytes: int  # a .docx's zip entries together; each stream of a PDF
    zip_entries: int
    xml_elements: int  # a .docx's XML parts together: what python-docx holds in memory
    paragraphs: int  # headings and empty ones included: they cost a parser as much
    pdf_pages: int

    @classmethod
    def from_settings(cls) -> Limits:
        """The limits the settings set."""
        return cls(
            unpacked_bytes=settings.KNOWLEDGE_MAX_UNPACKED_BYTES,
            zip_entries=settings.KNOWLEDGE_MAX_ZIP_ENTRIES,
            xml_elements=settings.KNOWLEDGE_MAX_XML_ELEMENTS,
            paragraphs=settings.KNOWLEDGE_MAX_PARAGRAPHS,
            pdf_pages=settings.KNOWLEDGE_MAX_PDF_PAGES,
        )


class ArchiveError(Exception):
    """The zip archive is damaged; the message says how."""


class ArchiveTooLarge(ArchiveError):
    """The zip archive holds more files or bytes than the limits allow; the message says which."""


def zip_unpacked(data: bytes, limits: Limits) -> io.BytesIO:
    """The archive's entries re-packed uncompressed, for a reader such as python-docx.

    The central directory (entry count, declared sizes) is checked before anything is
    inflated. Then each entry is copied in bounded reads, which stop at its declared size:
    zipfile's own `read()` inflates an entry's whole compressed stream in one call, so an entry
    that understates its size would otherwise inflate without bound inside the reader.
    """
    try:
        source = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError) as exc:
        raise ArchiveError(f"not a zip archive: {exc}") from exc
    with source:
        entries = source.infolist()
        if len(entries) > limits.zip_entries:
            raise ArchiveTooLarge(
                f"it holds {len(entries):,} files; the limit is {limits.zip_entries:,} "
                "(KNOWLEDGE_MAX_ZIP_ENTRIES)"
            )
        declared = sum(entry.file_size for entry in entries)
        if declared > limits.unpacked_bytes:
            raise ArchiveTooLarge(
                f"it unpacks to {declared:,} bytes; the limit is {limits.unpacked_bytes:,} "
                "(KNOWLEDGE_MAX_UNPACKED_BYTES)"
            )
        return _copied(source, entries)


def _copied(source: zipfile.ZipFile, entries: list[zipfile.ZipInfo]) -> io.BytesIO:
    out = io.BytesIO()
    try:
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as copy:
            for entry in entries:
                if entry.is_dir():
                    continue
                with source.open(entry) as reader, copy.open(entry.filename, "w") as writer:
                    shutil.copyfileobj(reader, writer, _READ_BYTES)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as exc:
        # (a bad CRC-32: an entry that inflates to other bytes than its directory entry says)
        raise ArchiveError(str(exc)) from exc
    out.seek(0)
    return out


def xml_within(package: io.BytesIO, limits: Limits, *, paragraph: str) -> None:
    """Check the XML parts of an unpacked archive: elements (and `paragraph` elements, a
    Clark-notation tag) are counted as they stream by, each dropped once counted, so a part of
    millions of tiny elements is refused before any reader builds its tree (lxml holds about
    125 bytes an element: 60 KB of deflated XML can hold 2 million, 250 MB)."""
    from lxml import etree  # (python-docx's XML library)

    elements = paragraphs = 0
    with zipfile.ZipFile(package) as archive:
        for entry in archive.infolist():
            if not entry.filename.endswith((".xml", ".rels")):
                continue
            with archive.open(entry) as stream:
                events = etree.iterparse(
                    stream, events=("end",), resolve_entities=False, no_network=True
                )
                try:
                    for _, element in events:
                        elements += 1
                        paragraphs += element.tag == paragraph
                        _within(elements, paragraphs, limits)
                        element.clear(keep_tail=False)
                        while element.getprevious() is not None:
                            del element.getparent()[0]  # (the counted siblings too)
                except etree.XMLSyntaxError as exc:
                    raise ArchiveError(f"{entry.filename} is not XML: {exc}") from exc
    package.seek(0)


def _within(elements: int, paragraphs: int, limits: Limits) -> None:
    if paragraphs > limits.paragraphs:
        raise ArchiveTooLarge(
            f"it has more than {limits.paragraphs:,} paragraphs (headings and empty ones "
            "included; the limit is KNOWLEDGE_MAX_PARAGRAPHS). Split it into parts"
        )
    if elements > limits.xml_elements:
        raise ArchiveTooLarge(
            f"its XML has more than {limits.xml_elements:,} elements (KNOWLEDGE_MAX_XML_ELEMENTS)"
        )


def pdf_limits(limits: Limits) -> AbstractContextManager:
    """pypdf's own limits set to ours while a PDF is read: each inflated stream, and the page
    tree (it has at most as many inner nodes as pages, so a larger tree is refused before it
    is walked)."""
    import pypdf  # (0.3 s of every process's start if imported at the top)

    most = limits.unpacked_bytes
    return pypdf.apply_configuration(
        maximum_declared_stream_length=most,
        array_based_stream_maximum_output_length=most,
        lzw_maximum_output_length=most,
        run_length_maximum_output_length=most,
        zlib_maximum_output_length=most,
        page_tree_maximum_entries=2 * limits.pdf_pages + 1,
    )
