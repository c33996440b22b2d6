"""Text out of uploaded files (.md, .txt, .html, .pdf, .docx) as paragraphs with heading paths."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from html.parser import HTMLParser

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


def parse(data: bytes, file_type: str) -> list[Block]:
    """Blocks of text of a file; ParseError when it is corrupt or has no text."""
    parser: Callable[[bytes], list[Block]] = {
        "md": _markdown,
        "txt": _plain,
        "html": _html,
        "pdf": _pdf,
        "docx": _docx,
    }[file_type]
    blocks = [b for b in parser(data) if b.text.strip()]
    if not blocks:
        if file_type == "pdf":
            raise ParseError(
                "The PDF has no text layer (a scan or images only); run OCR on it and upload "
                "the result."
            )
        raise ParseError("The file contains no text.")
    return blocks


def _decode(data: bytes) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ParseError(
            "The file is not UTF-8 text; save it as UTF-8 and upload it again."
        ) from exc
    if "\x00" in text:
        raise ParseError("The file is binary, not text.")
    return text


def _paragraphs(text: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", text.replace("\r\n", "\n")) if p.strip()]


def _plain(data: bytes) -> list[Block]:
    return [Block((), p) for p in _paragraphs(_decode(data))]


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


def _markdown(data: bytes) -> list[Block]:
    blocks: list[Block] = []
    path: list[str] = []
    levels: list[int] = []
    lines: list[str] = []

    def flush() -> None:
        blocks.extend(Block(tuple(path), p) for p in _paragraphs("\n".join(lines)))
        lines.clear()

    for line in _decode(data).splitlines():
        heading = _MD_HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
                path.pop()
            levels.append(level)
            path.append(heading.group(2))
        else:
            lines.append(line)
    flush()
    return blocks


class _HTMLText(HTMLParser):
    """Collects text blocks under h1–h6 headings; skips scripts, styles and other non-text."""

    SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object"}
    BLOCK = {"p", "div", "li", "tr", "br", "section", "article", "blockquote", "pre", "dd", "dt"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.path: list[tuple[int, str]] = []
        self.skipping = 0
        self.heading: int | None = None
        self.buffer: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.SKIP:
            self.skipping += 1
        elif re.fullmatch(r"h[1-6]", tag):
            self._flush()
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
        elif tag in self.BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.buffer.append(data)

    def _flush(self) -> None:
        text = "\n".join(" ".join(line.split()) for line in "".join(self.buffer).split("\n"))
        self.buffer.clear()
        heading = tuple(t for _, t in self.path)
        self.blocks.extend(Block(heading, p) for p in _paragraphs(text) if p)

    def close(self) -> None:
        super().close()
        self._flush()


def _html(data: bytes) -> list[Block]:
    parser = _HTMLText()
    parser.feed(_decode(data))
    parser.close()
    return parser.blocks


def _pdf(data: bytes) -> list[Block]:
    import pypdf
    from pypdf.errors import PdfReadError

    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise ParseError("The PDF is encrypted; upload an unprotected copy.")
        pages = [page.extract_text() or "" for page in reader.pages]
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as exc:
        raise ParseError(f"The PDF is damaged or not a PDF ({exc}).") from exc
    return [
        Block((f"p. {number}",), paragraph)
        for number, text in enumerate(pages, start=1)
        for paragraph in _paragraphs(text)
    ]


def _docx(data: bytes) -> list[Block]:
    import docx

    try:
        document = docx.Document(io.BytesIO(data))
    except (zipfile.BadZipFile, KeyError, ValueError) as exc:
        raise ParseError(f"The .docx file is damaged or not a Word document ({exc}).") from exc
    blocks: list[Block] = []
    path: list[tuple[int, str]] = []
    for paragraph in document.paragraphs:
        style = (paragraph.style.name if paragraph.style is not None else "") or ""
        level = _docx_heading_level(style)
        text = paragraph.text.strip()
        if level and text:
            path = [(lvl, t) for lvl, t in path if lvl < level] + [(level, text)]
        elif text:
            blocks.append(Block(tuple(t for _, t in path), text))
    for table in document.tables:
        for row in table.rows:
            cells = [cell.text.strip() for cell in row.cells]
            blocks.append(Block(tuple(t for _, t in path), " | ".join(c for c in cells if c)))
    return blocks


def _docx_heading_level(style: str) -> int:
    if style == "Title":
        return 1
    match = re.fullmatch(r"Heading (\d)", style)
    return int(match.group(1)) if match else 0
