"""Many files uploaded at once: each through the one upload service, each with its own outcome."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from typing import Any, Protocol

from django.utils.translation import gettext as _

from agents.knowledge.models import KnowledgeBase
from agents.knowledge.parsing import ParseError, parse
from agents.knowledge.selectors import document_with_hash
from agents.knowledge.services import content_hash_of, document_upload, upload_check
from config.errors import AppError

logger = logging.getLogger(__name__)

ADDED = "added"
NEW_VERSION = "new_version"
UNCHANGED = "unchanged"
REFUSED = "refused"


class UploadedFile(Protocol):
    """What a batch needs of a file: Django's UploadedFile has it."""

    name: str | None
    size: int | None

    def read(self) -> bytes:
        """The file's bytes."""
        ...


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file: added, a new version, unchanged (same bytes) or refused."""

    filename: str
    outcome: str
    message: str
    document_id: int | None = None
    version: int | None = None


def documents_upload_many(
    *,
    kb: KnowledgeBase,
    files: Iterable[UploadedFile],
    user: Any = None,
    effective_date: date | None = None,
) -> list[FileOutcome]:
    """Upload each file to the knowledge base (indexing in the background), in its own
    transaction: a refused file never loses the others. A file is refused for its type, size,
    or text that cannot be read (checked with the indexing's own parser before it is stored)."""
    return [
        _one(kb=kb, upload=upload, user=user, effective_date=effective_date) for upload in files
    ]


def _one(*, kb: KnowledgeBase, upload: UploadedFile, user: Any, effective_date: date | None):
    """The outcome of one file."""
    filename = upload.name or ""
    try:
        file_type = upload_check(filename=filename, size=upload.size or 0)
    except AppError as exc:
        return FileOutcome(filename, REFUSED, exc.message)
    data = upload.read()
    twin = document_with_hash(kb=kb, content_hash=content_hash_of(data))
    if twin is not None:
        return _unchanged(filename, kb, twin.pk, twin.title, twin.version)
    if (unreadable := _unreadable(filename, data, file_type)) is not None:
        return FileOutcome(filename, REFUSED, unreadable)
    try:
        document = document_upload(
            kb=kb, filename=filename, data=data, effective_date=effective_date, user=user
        )
    except AppError as exc:
        if exc.code == "duplicate_document":  # the same bytes arrived meanwhile
            details = exc.details or {}
            return FileOutcome(
                filename, UNCHANGED, exc.message, details.get("document_id"), details.get("version")
            )
        return FileOutcome(filename, REFUSED, exc.message)
    if document.version > 1:
        message = _("“%(title)s” is now version %(version)s; it is being indexed.")
        outcome = NEW_VERSION
    else:
        message = _("Added as “%(title)s”; it is being indexed.")
        outcome = ADDED
    words = message % {"title": document.title, "version": document.version}
    return FileOutcome(filename, outcome, words, document.pk, document.version)


def _unchanged(filename: str, kb: KnowledgeBase, pk: int, title: str, version: int):
    message = _(
        "Already in %(knowledge_base)s as “%(title)s” version %(version)s; no new version was made."
    ) % {"knowledge_base": kb.name_in(), "title": title, "version": version}
    return FileOutcome(filename, UNCHANGED, message, pk, version)


def _unreadable(filename: str, data: bytes, file_type: str) -> str | None:
    """Why the indexing's parser cannot read the file, or None when it can."""
    try:
        parse(data, file_type)
    except ParseError as exc:
        reason = str(exc)
    except Exception as exc:  # a parser library's own error: this file, not the batch
        logger.warning("batch upload: %s could not be parsed", filename, exc_info=True)
        reason = f"{type(exc).__name__}: {str(exc)[:300]}"
    else:
        return None
    return _("The file cannot be read: %(reason)s") % {"reason": reason}
