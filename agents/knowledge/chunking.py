"""Cut a document's blocks into bounded chunks along headings and paragraphs, with overlap."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agents.knowledge.parsing import Block

_SENTENCE_END = re.compile(r"(?<=[。！？；.!?;])\s*|\n")


@dataclass(frozen=True)
class ChunkDraft:
    """A chunk before it is saved: its headings and text."""

    heading_path: tuple[str, ...]
    text: str


def chunk_blocks(blocks: list[Block], *, max_chars: int, overlap: int) -> list[ChunkDraft]:
    """Paragraphs of one section are packed up to `max_chars`; a section never spills into the
    next; within a section each chunk repeats the last <= `overlap` characters of the previous."""
    overlap = max(0, min(overlap, max_chars // 2))
    chunks: list[ChunkDraft] = []
    # Long paragraphs are cut to leave room for the previous chunk's tail in front of them.
    piece_limit = max_chars - overlap - 1 if overlap else max_chars
    for path, pieces in _sections(blocks, piece_limit):
        current = ""
        for piece in pieces:
            joined = f"{current}\n\n{piece}" if current else piece
            if len(joined) <= max_chars:
                current = joined
                continue
            chunks.append(ChunkDraft(path, current))
            tail = _tail(current, overlap)
            current = (
                f"{tail} {piece}" if tail and len(tail) + 1 + len(piece) <= max_chars else piece
            )
        if current:
            chunks.append(ChunkDraft(path, current))
    return chunks


def _sections(blocks: list[Block], max_chars: int) -> list[tuple[tuple[str, ...], list[str]]]:
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    for block in blocks:
        pieces = _split_long(block.text.strip(), max_chars)
        if sections and sections[-1][0] == block.heading_path:
            sections[-1][1].extend(pieces)
        else:
            sections.append((block.heading_path, pieces))
    return sections


def _split_long(text: str, max_chars: int) -> list[str]:
    """A paragraph over the limit is cut at sentence ends, then at spaces, then anywhere."""
    if len(text) <= max_chars:
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in (s for s in _SENTENCE_END.split(text) if s):
        while len(sentence) > max_chars:
            cut = sentence.rfind(" ", 0, max_chars)
            cut = cut if cut > max_chars // 2 else max_chars
            sentence_head, sentence = sentence[:cut].rstrip(), sentence[cut:].lstrip()
            if current:
                pieces.append(current)
                current = ""
            pieces.append(sentence_head)
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = sentence
        else:
            current = (
                f"{current} {sentence}" if current and _needs_space(current) else current + sentence
            )
    if current:
        pieces.append(current)
    return pieces


def _needs_space(text: str) -> bool:
    return text[-1].isascii()


def _tail(text: str, overlap: int) -> str:
    """The end of `text`, at most `overlap` characters, starting at a sentence or word start."""
    if overlap <= 0:
        return ""
    tail = text[-overlap:]
    if len(tail) == len(text):
        return tail
    for boundary in (_SENTENCE_END, re.compile(r"\s")):
        match = boundary.search(tail)
        if match and match.end() < len(tail):
            return tail[match.end() :].strip()
    return tail.strip()
