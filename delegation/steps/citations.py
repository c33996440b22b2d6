"""Citations: number the sources a run is shown, and find what its answer relies on.

Passages from `kb_search`, documents from `kb_documents` and pages from `web_fetch` get a number
per run (`ref`), which the model cites as [1], [2]. A knowledge reference is keyed by document
and chunk; a web page, which has no document, by its URL. An expert's citations join its
caller's numbering when the caller reads the expert's answer, so the entry agent's answer cites
its experts' sources too. A marker that points at nothing the run was shown is dropped (and
logged): no invented sources.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from delegation.models import Run

logger = logging.getLogger(__name__)

KNOWLEDGE_TOOLS = frozenset({"kb_search", "kb_documents"})
WEB_TOOLS = frozenset({"web_fetch"})
CITED_TOOLS = KNOWLEDGE_TOOLS | WEB_TOOLS  # tools whose results join the run's numbering
MARKER = re.compile(r"\[(\d{1,3})\]")
QUOTE_CHARS = 240
OVERLAP_GRAM = 4  # characters: works for Chinese (no word boundaries) and English alike
OVERLAP_MIN = 6  # shared 4-grams for an uncited passage to count as used


def references_number(run: Run, data: dict[str, Any]) -> dict[str, Any]:
    """A cited tool's result with a `ref` on each passage or document (or on the page, for a web
    page), numbered on from the run's earlier references (the same source keeps its number)."""
    if _is_web_page(data):
        data["ref"] = _reference(run, _as_web_reference(data))
        return data
    for item in [*data.get("passages", []), *data.get("documents", [])]:
        item["ref"] = _reference(run, _as_reference(item))
    return data


def references_from_child(run: Run, child: Run) -> dict[int, int]:
    """Add an expert's citations to the caller's references: {expert's ref: caller's ref}."""
    mapping = {}
    for citation in child.citations or []:
        mapping[citation["ref"]] = _reference(run, citation)
    return mapping


def renumber(text: str, mapping: dict[int, int]) -> str:
    """The text with each [n] marker of `mapping` rewritten to its new number."""
    if not mapping:
        return text
    return MARKER.sub(
        lambda m: f"[{mapping[int(m.group(1))]}]" if int(m.group(1)) in mapping else m.group(0),
        text,
    )


def citations_for(run: Run, answer: str) -> list[dict[str, Any]]:
    """The references the answer relies on: the ones it cites as [n]; with no valid marker, the
    passages it visibly draws on (shared wording). Markers pointing at nothing are dropped."""
    by_ref = {r["ref"]: r for r in run.references or []}
    cited, unknown = [], []
    for number in dict.fromkeys(int(n) for n in MARKER.findall(answer)):
        (cited if number in by_ref else unknown).append(number)
    if unknown and by_ref:
        logger.warning("run %s cited unknown references %s: dropped", run.id, unknown)
    if cited:
        return [by_ref[n] for n in cited]
    grams = _grams(answer)
    return [
        r
        for r in run.references or []
        if _has_text(r) and len(grams & _grams(r["quote"])) >= OVERLAP_MIN
    ]


def retrieved_passages(run: Run) -> bool:
    """Whether any knowledge passage (not just a document list, nor a web page) reached this
    run: what a strict answer must rest on."""
    return any(r.get("chunk_id") is not None for r in run.references or [])


def _has_text(reference: dict[str, Any]) -> bool:
    """Whether the reference quotes text (a passage or a page), not just a document's title."""
    return reference.get("chunk_id") is not None or bool(reference.get("url"))


def _reference(run: Run, reference: dict[str, Any]) -> int:
    """The run's number for this passage/document/page, adding it if new."""
    key = _key(reference)
    for existing in run.references or []:
        if _key(existing) == key:
            return existing["ref"]
    number = len(run.references or []) + 1
    run.references = [*(run.references or []), {**reference, "ref": number}]
    return number


def _key(reference: dict[str, Any]) -> tuple[Any, ...]:
    """What makes a reference the same source: a page's URL, else its document and chunk."""
    if reference.get("document_id") is None and reference.get("url"):
        return ("web", reference["url"])
    return ("knowledge", reference["document_id"], reference.get("chunk_id"))


def _is_web_page(data: dict[str, Any]) -> bool:
    """Whether a tool result is one web page (agents/tools/web.py: `source.kind` "web")."""
    source = data.get("source")
    return isinstance(source, dict) and source.get("kind") == "web" and bool(data.get("url"))


def _as_web_reference(page: dict[str, Any]) -> dict[str, Any]:
    """What a citation keeps of a web page: its URL, title and the start of its text; the
    knowledge fields are empty, so readers of either kind find every key."""
    text = " ".join(str(page.get("untrusted_page_text") or "").split())
    title = str(page.get("title") or page["url"])
    return {
        "kind": "web",
        "url": page["url"],
        "document_id": None,
        "title": title,
        "version": None,
        "chunk_id": None,
        "heading_path": [],
        "effective_date": None,
        "kb": None,
        "kb_name": None,
        "quote": text[:QUOTE_CHARS] or title,
    }


def _as_reference(item: dict[str, Any]) -> dict[str, Any]:
    """What a citation keeps of a passage (chunk) or a document (no chunk: quote = title), with
    the knowledge base it is from."""
    text = item.get("text") or ""
    return {
        "document_id": item["document_id"],
        "title": item["title"],
        "version": item.get("version"),
        "chunk_id": item.get("chunk_id"),
        "heading_path": item.get("heading_path") or [],
        "effective_date": item.get("effective_date"),
        "kb": item.get("kb"),  # the knowledge base's key, and its name in the turn's language
        "kb_name": item.get("kb_name"),
        "quote": text[:QUOTE_CHARS] if text else item["title"],
    }


def _grams(text: str) -> set[str]:
    compact = re.sub(r"\s+", " ", text.lower())
    return {compact[i : i + OVERLAP_GRAM] for i in range(max(0, len(compact) - OVERLAP_GRAM + 1))}
