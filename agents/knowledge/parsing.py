"""Text out of uploaded files (.md, .txt, .html, .pdf, .docx) as paragraphs with heading paths."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser

from agents.knowledge.limits import (
    ArchiveError,
    ArchiveTooLarge,
    Limits,
    pdf_limits,
    xml_within,
    zip_unpacked,
)

# pypdf and python-docx are imported by their readers: 0.3 s of every process's start otherwise.
SUPPORTED = ("md", "markdown", "txt", "html", "htm", "pdf", "docx")


class ParseError(Exception):
    """The file cannot be read as the type it claims; the message says why, for people."""


@dataclass(frozen=True)
class Block:
    """One paragraph (or list item, table row, page paragraph) under its headings."""

    heading_path: tuple[str, ...]
    text: str


def file_type_of(filename: str) -> str:
    """The normalised type from the file name's extension ('' when unsupported)."""
    ext = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return {"markdown": "md", "htm": "html"}.get(ext, ext) if ext in SUPPORTED else ""


def parse(data: bytes, file_type: str, limits: Limits | None = None) -> list[Block]:
    """Blocks of text of a file; ParseError when it is corrupt, has no text or passes a limit
    (by default the settings')."""
    parser: Callable[[bytes, Limits], list[Block]] = {
        "md": _markdown,
        "txt": _plain,
        "html": _html,
        "pdf": _pdf,
        "docx": _docx,
    }[file_type]
    blocks = [b for b in parser(data, limits or Limits.from_settings()) if b.text.strip()]
    if not blocks:
        if file_type == "pdf":
            raise ParseError(
                "The PDF has no text layer (a scan or images only); run OCR on it and upload "
                "the result."
            )
        raise ParseError("The file contains no text.")
    return blocks


class _Blocks:
    """The blocks read so far; a ParseError as soon as more paragraphs were read than the
    limit allows (headings and empty paragraphs count: they cost a parser as much)."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.read = 0
        self.items: list[Block] = []

    def add(self, heading_path: tuple[str, ...], text: str) -> None:
        """One paragraph of text under its headings."""
        self.count()
        self.items.append(Block(heading_path, text))

    def count(self) -> None:
        """A paragraph read that makes no block (a heading, an empty one)."""
        self.read += 1
        _within_paragraph_limit(self.read, self.limits)


def _within_paragraph_limit(count: int, limits: Limits) -> None:
    if count > limits.paragraphs:
        raise ParseError(
            f"The file has more than {limits.paragraphs:,} paragraphs (headings and empty ones "
            "included; the limit is KNOWLEDGE_MAX_PARAGRAPHS). Split it into parts."
        )


def _decode(data: bytes) -> str:
    utf16 = data.startswith((b"\xff\xfe", b"\xfe\xff"))  # a byte order mark
    try:
        text = data.decode("utf-16" if utf16 else "utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            f"The file is not {'UTF-16' if utf16 else 'UTF-8'} text ({exc.reason} at byte "
            f"{exc.start:,}); save it as UTF-8 and upload it again."
        ) from exc
    # The same for UTF-16: a NUL is not text (and Postgres refuses it in a text column).
    if "\x00" in text:
        raise ParseError("The file is binary, not text.")
    return text


_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def _paragraphs(text: str) -> Iterator[str]:
    """The non-empty paragraphs of text (split at blank lines), stripped, one at a time: a
    limit stops a file of millions before they are all in memory."""
    text = text.replace("\r\n", "\n")
    start = 0
    for match in _PARAGRAPH_BREAK.finditer(text):
        if paragraph := text[start : match.start()].strip():
            yield paragraph
        start = match.end()
    if paragraph := text[start:].strip():
        yield paragraph


def _plain(data: bytes, limits: Limits) -> list[Block]:
    blocks = _Blocks(limits)
    for paragraph in _paragraphs(_decode(data)):
        blocks.add((), paragraph)
    return blocks.items


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _markdown(data: bytes, limits: Limits) -> list[Block]:
    blocks = _Blocks(limits)
    path: list[str] = []
    levels: list[int] = []
    lines: list[str] = []

    def flush() -> None:
        for paragraph in _paragraphs("\n".join(lines)):
            blocks.add(tuple(path), paragraph)
        lines.clear()

    for line in io.StringIO(_decode(data), newline=None):  # line by line, not all at once
        line = line.rstrip("\n")
        heading = _MD_HEADING.match(line)
        if heading:
            flush()
            blocks.count()
            level = len(heading.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
                path.pop()
            levels.append(level)
            path.append(heading.group(2))
        else:
            lines.append(line)
    flush()
    return blocks.items


class _HTMLText(HTMLParser):
    """Collects text blocks under h1–h6 headings; skips scripts, styles and other non-text."""

    SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
    BLOCK = {"p", "div", "li", "tr", "br", "section", "article", "blockquote", "pre", "dd", "dt"}

    def __init__(self, limits: Limits) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks = _Blocks(limits)
        self.path: list[tuple[int, str]] = []
        self.skipping = 0
        self.heading: int | None = None
        self.buffer: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self.blocks.count()
            self.heading = int(tag[1])
        elif tag in self.BLOCK or tag in {"td", "th"}:
            self.buffer.append(" " if tag in {"td", "th"} else "\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skipping = max(0, self.skipping - 1)
        elif self.heading is not None and tag == f"h{self.heading}":
            title = " ".join("".join(self.buffer).split())
            self.buffer.clear()
            self.path = [(lvl, t) for lvl, t in self.path if lvl < self.heading]
            if title:
                self.path.append((self.heading, title))
            self.heading = None
        elif tag in self.BLOCK and not self._flush():
            self.blocks.count()  # an empty block: `<p></p>` a million times is work too

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.buffer.append(data)

    def _flush(self) -> int:
        text = "\n".join(" ".join(line.split()) for line in "".join(self.buffer).split("\n"))
        self.buffer.clear()
        heading = tuple(t for _, t in self.path)
        before = len(self.blocks.items)
        for paragraph in _paragraphs(text):
            self.blocks.add(heading, paragraph)
        return len(self.blocks.items) - before

    def close(self) -> None:
        super().close()
        self._flush()


def _html(data: bytes, limits: Limits) -> list[Block]:
    parser = _HTMLText(limits)
    parser.feed(_decode(data))
    parser.close()
    return parser.blocks.items


def _pdf(data: bytes, limits: Limits) -> list[Block]:
    import pypdf
    from pypdf.errors import LimitReachedError, PyPdfError

    blocks = _Blocks(limits)
    with pdf_limits(limits):
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted:
                raise ParseError("The PDF is encrypted; upload an unprotected copy.")
            if (pages := len(reader.pages)) > limits.pdf_pages:
                raise ParseError(
                    f"The PDF has {pages:,} pages; the limit is "
                    f"{limits.pdf_pages:,} (KNOWLEDGE_MAX_PDF_PAGES). Split it into parts."
                )
            for number, page in enumerate(reader.pages, start=1):
                # (a NUL is no text, and Postgres refuses it in a text column)
                text = (page.extract_text() or "").replace("\x00", "")
                for paragraph in _paragraphs(text):
                    blocks.add((f"p. {number}",), paragraph)
        except LimitReachedError as exc:
            raise ParseError(
                f"The PDF passes a safety limit ({exc}); the limits are "
                f"{limits.pdf_pages:,} pages (KNOWLEDGE_MAX_PDF_PAGES) and "
                f"{limits.unpacked_bytes:,} bytes per stream (KNOWLEDGE_MAX_UNPACKED_BYTES)."
            ) from exc
        except (PyPdfError, ValueError, KeyError, TypeError, OSError) as exc:
            raise ParseError(f"The PDF is damaged or not a PDF ({exc}).") from exc
    return blocks.items


def _docx(data: bytes, limits: Limits) -> list[Block]:
    import docx
    from docx.enum.style import WD_STYLE_TYPE
    from docx.oxml.ns import qn

    try:
        package = zip_unpacked(data, limits)
        xml_within(package, limits, paragraph=qn("w:p"))  # before python-docx builds trees
        document = docx.Document(package)
    except ArchiveTooLarge as exc:
        raise ParseError(f"The .docx file is refused: {exc}.") from exc
    except (ArchiveError, zipfile.BadZipFile, KeyError, ValueError, SyntaxError) as exc:
        # (SyntaxError: lxml's XMLSyntaxError, a part that is not XML)
        raise ParseError(f"The .docx file is damaged or not a Word document ({exc}).") from exc
    body = document.element.body
    # A style's name by its id, looked up once: python-docx looks it up for every paragraph.
    styles: dict[str | None, str] = {}
    path: list[tuple[int, str]] = []
    items: list[Block] = []
    for paragraph in body.iterchildren(qn("w:p")):
        text = paragraph.text.strip()
        if not text:
            continue
        if paragraph.style not in styles:
            style = document.styles.get_by_id(paragraph.style, WD_STYLE_TYPE.PARAGRAPH)
            styles[paragraph.style] = (style.name if style is not None else "") or ""
        level = _docx_heading_level(styles[paragraph.style])
        if level:
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text)]
        else:
            items.append(Block(tuple(t for _, t in path), text))
    for table in document.tables:
        for row in table.rows:
            cells = [cell.text.strip() for cell in row.cells]
            items.append(Block(tuple(t for _, t in path), " | ".join(c for c in cells if c)))
    return items


def _docx_heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else 0
