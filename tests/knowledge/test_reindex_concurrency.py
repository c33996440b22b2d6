"""A reader in another connection never sees a document half re-indexed (SQLite WAL, and
Postgres in the Postgres pass): each count it reads is the old chunk count or the new one."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from agents.knowledge.models import Chunk
from agents.knowledge.services import document_reindex, document_upload, knowledge_base_create


@pytest.mark.django_db(transaction=True)
def test_concurrent_reader_sees_old_or_new_chunks_only(settings):
    settings.KNOWLEDGE_CHUNK_CHARS, settings.KNOWLEDGE_CHUNK_OVERLAP = 200, 0
    kb = knowledge_base_create(name="hr")
    text = "\n\n".join(f"第{i}條：員工每年享有特休七日，病假三十日。" * 4 for i in range(30))
    document = document_upload(kb=kb, filename="rules.md", data=text.encode(), background=False)
    small = Chunk.objects.filter(document=document).count()
    seen: set[int] = set()
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                seen.add(Chunk.objects.filter(document_id=document.pk).count())
        finally:
            connection.close()

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for round_number in range(6):
            settings.KNOWLEDGE_CHUNK_CHARS = 100 if round_number % 2 == 0 else 200
            document_reindex(document=document)  # indexed on commit
    finally:
        done.set()
        reader.join(timeout=30)
    settings.KNOWLEDGE_CHUNK_CHARS = 100
    document_reindex(document=document)  # indexed on commit
    large = Chunk.objects.filter(document=document).count()
    assert large > small and seen and seen <= {small, large}
