"""Every way indexing can go wrong ends the document `failed` with a reason an admin reads (in
admin and the API); none leaves it queued. One worker indexes a document per send: a duplicate
delivery does nothing, and an indexing overtaken by a re-index writes nothing."""

from __future__ import annotations

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.urls import reverse

from agents.knowledge import services
from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.services import (
    document_index,
    document_reindex,
    document_upload,
)
from agents.knowledge.tasks import index_document
from tests.api.conftest import token_client
from tests.factories import make_user
from tests.knowledge import bombs

pytestmark = pytest.mark.django_db


def test_a_pypdf_limit_error_fails_the_document_with_the_reason(kb, upload):
    """pypdf's LimitReachedError is no PdfReadError: it left the document queued. (76 MB:
    past pypdf's own default limit too, 75 MB, as past ours.)"""
    document = upload(kb, "inflating.pdf", bombs.pdf_with_inflating_page(76 * 2**20))
    assert document.status == DocumentStatus.FAILED
    assert "safety limit" in document.status_detail
    assert "Limit reached while decompressing" in document.status_detail


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("\ufeffpay\x00day".encode("utf-16-le"), "binary, not text"),
        ("\ufeffpay\x00day".encode("utf-16-be"), "binary, not text"),
        (b"\xff\xfe" + "odd".encode("utf-16-le") + b"x", "not UTF-16 text"),
    ],
    ids=["utf-16-le with a NUL", "utf-16-be with a NUL", "utf-16 cut mid-character"],
)
def test_utf16_text_that_is_not_text_fails_with_the_reason(kb, upload, data, reason):
    """A NUL passed on to Postgres (which refuses it); a bad UTF-16 byte raised out of the task."""
    document = upload(kb, "notes.txt", data)
    assert document.status == DocumentStatus.FAILED
    assert reason in document.status_detail
    assert "\x00" not in document.text


def test_the_soft_time_limit_fails_the_document_with_the_reason(kb, upload, monkeypatch):
    def slow(*args, **kwargs):
        raise SoftTimeLimitExceeded()  # what Celery raises in the task at its soft limit

    monkeypatch.setattr(services, "parse", slow)
    document = upload(kb, "big.md", "# Big\n\nText.")
    assert document.status == DocumentStatus.FAILED
    assert "longer than 600 s (KNOWLEDGE_INDEX_TIME_LIMIT)" in document.status_detail


def test_an_unexpected_error_fails_the_document_naming_it(kb, upload, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("a parser bug")

    monkeypatch.setattr(services, "chunk_blocks", broken)
    document = upload(kb, "a.md", "# A\n\nText.")
    assert document.status == DocumentStatus.FAILED
    assert "ZeroDivisionError: a parser bug" in document.status_detail
    assert "indexing document" in caplog.text  # with its traceback, for whoever fixes it


def test_the_reason_shows_in_admin_and_in_the_api(kb, upload, client):
    document = upload(kb, "bomb.docx", bombs.docx_of_empty_paragraphs(60_000))
    root = make_user("root", is_staff=True, is_superuser=True)
    client.force_login(root)
    listing = client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "failed: The .docx file is refused: it has more than 50,000 paragraphs" in listing
    answer = token_client(root).get(f"/api/v1/knowledge-bases/{kb.pk}/documents/{document.pk}/")
    assert answer.status_code == 200, answer.content
    assert answer.json()["status"] == "failed"
    assert "KNOWLEDGE_MAX_PARAGRAPHS" in answer.json()["status_detail"]


def test_the_indexing_task_stops_at_its_own_time_limits(settings):
    assert index_document.soft_time_limit == settings.KNOWLEDGE_INDEX_TIME_LIMIT
    assert index_document.time_limit == settings.KNOWLEDGE_INDEX_TIME_LIMIT + 30


def test_a_duplicate_delivery_does_nothing(kb, upload):
    document = upload(kb, "a.md", "# 事假\n\n事假十四日。")
    chunks = list(Chunk.objects.filter(document=document).values_list("id", flat=True))
    index_document.apply(args=[document.pk])  # the broker delivers the task again
    after = Document.objects.get(pk=document.pk)
    assert (after.status, after.indexed_at) == (DocumentStatus.INDEXED, document.indexed_at)
    assert list(Chunk.objects.filter(document=document).values_list("id", flat=True)) == chunks


def test_an_indexing_overtaken_by_a_reindex_writes_nothing(
    kb, monkeypatch, django_capture_on_commit_callbacks
):
    document = document_upload(kb=kb, filename="a.md", data="# 假\n\n病假三十日。".encode())
    parse = services.parse

    def reindexed_meanwhile(*args, **kwargs):
        with django_capture_on_commit_callbacks() as queued:  # its task is not run yet
            document_reindex(document=document)
        reindexed_meanwhile.queued = queued
        return parse(*args, **kwargs)

    monkeypatch.setattr(services, "parse", reindexed_meanwhile)
    document_index(document_id=document.pk)
    document.refresh_from_db()
    assert document.status == DocumentStatus.QUEUED and not Chunk.objects.exists()
    monkeypatch.setattr(services, "parse", parse)
    for callback in reindexed_meanwhile.queued:
        callback()  # the re-index's own task
    document.refresh_from_db()
    assert document.status == DocumentStatus.INDEXED and Chunk.objects.count() == 1
