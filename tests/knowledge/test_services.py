"""Uploads, versions, indexing status, re-index atomicity, deletion and every refused input."""

from __future__ import annotations

import pytest

from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.retrieval import passages_search
from agents.knowledge.services import (
    document_delete,
    document_index,
    document_reindex,
    document_upload,
    knowledge_base_create,
)
from config.errors import AppError
from tests.knowledge.files import docx_file, pdf_with_text, pdf_without_text

pytestmark = pytest.mark.django_db


def search(kb, query):
    return passages_search(kb_ids=[kb.pk], query=query)


def test_upload_is_queued_then_indexed_with_its_chunk_count(kb, upload, settings):
    settings.KNOWLEDGE_CHUNK_CHARS = 100
    text = "# Leave\n\n" + "\n\n".join(
        f"Rule {i}: annual leave is granted yearly." for i in range(8)
    )
    document = upload(kb, "leave.md", text, title="Leave policy", source="wiki/leave")
    assert document.status == DocumentStatus.INDEXED and document.version == 1
    assert document.chunk_count == Chunk.objects.filter(document=document).count() > 1
    assert document.status_text == f"indexed with {document.chunk_count} chunks"
    assert "Rule 7" in document.text


def test_upload_without_commit_stays_queued(kb):
    document = document_upload(kb=kb, filename="a.txt", data=b"hello world")
    assert document.status == DocumentStatus.QUEUED and document.status_text == "queued"
    assert not Chunk.objects.exists()


@pytest.mark.parametrize(
    ("make", "filename", "title"),
    [
        (lambda: pdf_with_text("Taxi receipts are required."), "policy.pdf", "Expense policy"),
        (lambda: docx_file("Policy", {"Taxi": ["Taxi receipts are required."]}), "p.docx", "Docx"),
        (lambda: b"<h1>Taxi</h1><p>Taxi receipts are required.</p>", "p.html", "Html"),
    ],
)
def test_each_file_type_is_searchable_after_indexing(kb, upload, make, filename, title):
    upload(kb, filename, make(), title=title)
    assert search(kb, "taxi receipts")[0].title == title


def test_new_version_replaces_chunks_and_keeps_the_old_one_superseded(kb, upload):
    v1 = upload(kb, "leave.md", "# 特休\n\n特休三日。", title="人資假勤規定")
    v2 = upload(kb, "leave-2026.md", "# 特休\n\n特休七日。", title="人資假勤規定")
    v1.refresh_from_db()
    assert (v2.version, v2.superseded, v1.superseded, v1.superseded_by) == (2, False, True, v2)
    assert v1.status_text == "superseded by version 2"
    assert not Chunk.objects.filter(document=v1).exists()
    assert [p.text for p in search(kb, "特休")] == ["特休七日。"]


def test_same_source_with_a_new_title_is_a_new_version(kb, upload):
    upload(kb, "a.md", "old text here", title="Old name", source="share/policy.md")
    v2 = upload(kb, "b.md", "new text here", title="New name", source="share/policy.md")
    assert v2.version == 2 and Document.objects.filter(superseded=True).count() == 1


def test_duplicate_content_makes_no_new_version(kb, upload):
    first = upload(kb, "a.md", "same bytes", title="A")
    with pytest.raises(AppError) as caught:
        document_upload(kb=kb, filename="copy.md", data=b"same bytes", title="A")
    assert caught.value.code == "duplicate_document" and caught.value.status == 409
    assert caught.value.details == {"document_id": first.pk, "version": 1}
    assert Document.objects.count() == 1


def test_same_bytes_in_another_knowledge_base_is_fine(kb, upload):
    other = knowledge_base_create(name="finance")
    upload(kb, "a.md", "shared memo")
    assert upload(other, "a.md", "shared memo").status == DocumentStatus.INDEXED


@pytest.mark.parametrize(
    ("filename", "data", "code", "status"),
    [
        ("virus.exe", b"MZ...", "unsupported_file", 415),
        ("noextension", b"text", "unsupported_file", 415),
        ("empty.md", b"", "empty_file", 400),
    ],
)
def test_refused_uploads_store_nothing(kb, filename, data, code, status):
    with pytest.raises(AppError) as caught:
        document_upload(kb=kb, filename=filename, data=data)
    assert (caught.value.code, caught.value.status) == (code, status)
    assert not Document.objects.exists()


def test_file_size_limit_at_its_edge(kb, settings):
    settings.KNOWLEDGE_MAX_FILE_BYTES = 10
    assert document_upload(kb=kb, filename="ok.txt", data=b"x" * 10).pk
    with pytest.raises(AppError) as caught:
        document_upload(kb=kb, filename="big.txt", data=b"y" * 11)
    assert caught.value.code == "file_too_large" and "10" in caught.value.message


@pytest.mark.parametrize(
    ("filename", "data", "reason"),
    [
        ("scan.pdf", pdf_without_text(), "no text layer"),
        ("broken.pdf", b"%PDF-1.7 truncated", "damaged"),
        ("broken.docx", b"PK\x03\x04oops", "damaged"),
        ("blank.txt", b"   \n\n ", "no text"),
    ],
)
def test_unreadable_files_fail_with_the_reason_and_are_kept(kb, upload, filename, data, reason):
    document = upload(kb, filename, data)
    assert document.status == DocumentStatus.FAILED and reason in document.status_detail
    assert document.status_text.startswith("failed: ")
    assert bytes(document.original) == data  # nothing lost: it can be fixed and re-indexed


def test_too_many_chunks_fails_the_document(kb, upload, settings):
    settings.KNOWLEDGE_CHUNK_CHARS, settings.KNOWLEDGE_MAX_CHUNKS = 50, 3
    document = upload(kb, "long.txt", "\n\n".join(f"paragraph {i} " * 4 for i in range(10)))
    assert (
        document.status == DocumentStatus.FAILED
        and "KNOWLEDGE_MAX_CHUNKS" in document.status_detail
    )


def test_a_failed_new_version_leaves_the_current_one_searchable(kb, upload):
    v1 = upload(kb, "rules.md", "# 病假\n\n病假三十日。", title="規定")
    v2 = upload(kb, "rules.pdf", pdf_without_text(), title="規定")
    v1.refresh_from_db()
    assert v2.status == DocumentStatus.FAILED and not v1.superseded
    assert search(kb, "病假")[0].document_id == v1.pk


def test_reindex_failing_midway_keeps_the_old_chunks(
    kb, upload, monkeypatch, django_capture_on_commit_callbacks
):
    document = upload(kb, "a.md", "# 事假\n\n事假十四日。")
    before = list(Chunk.objects.filter(document=document).values_list("id", "text"))

    def broken_bulk_create(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(Chunk.objects, "bulk_create", broken_bulk_create)
    with django_capture_on_commit_callbacks(execute=True):
        document_reindex(document=document)  # the old chunks were deleted inside the swap
    assert list(Chunk.objects.filter(document=document).values_list("id", "text")) == before
    document.refresh_from_db()  # and the document says why it is not re-indexed
    assert document.status == DocumentStatus.FAILED
    assert "RuntimeError: disk full" in document.status_detail


def test_reindex_swaps_chunks(kb, upload, settings, django_capture_on_commit_callbacks):
    document = upload(kb, "a.md", "# 事假\n\n" + "事假十四日，不給薪。" * 30)
    old_ids = set(Chunk.objects.filter(document=document).values_list("id", flat=True))
    settings.KNOWLEDGE_CHUNK_CHARS = 120
    with django_capture_on_commit_callbacks(execute=True):
        document_reindex(document=document)
    document.refresh_from_db()
    new_ids = set(Chunk.objects.filter(document=document).values_list("id", flat=True))
    assert document.status == DocumentStatus.INDEXED and len(new_ids) == document.chunk_count > 1
    assert not old_ids & new_ids


def test_indexing_a_deleted_document_is_a_no_op(kb):
    document = document_upload(kb=kb, filename="a.txt", data=b"soon gone")
    kb.delete()
    document_index(document_id=document.pk)  # the queued task runs after the delete
    assert not Document.objects.exists() and not Chunk.objects.exists()


def test_deleting_the_current_version_brings_back_the_previous(
    kb, upload, django_capture_on_commit_callbacks
):
    v1 = upload(kb, "a.md", "年假七日", title="假")
    v2 = upload(kb, "b.md", "年假十日", title="假")
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=v2)
    v1.refresh_from_db()
    assert not v1.superseded and v1.status == DocumentStatus.INDEXED
    assert [p.text for p in search(kb, "年假")] == ["年假七日"]


def test_deleting_a_superseded_version_keeps_the_current(kb, upload):
    v1 = upload(kb, "a.md", "年假七日", title="假")
    v2 = upload(kb, "b.md", "年假十日", title="假")
    v1.refresh_from_db()
    document_delete(document=v1)
    assert [p.document_id for p in search(kb, "年假")] == [v2.pk]
