"""Dense retrieval through the real openai client against the fake server's deterministic
embeddings: vectors stored compactly, fused with lexical results, failures fall back."""

from __future__ import annotations

import pytest

from agents.knowledge.models import Chunk
from agents.knowledge.retrieval import dense, passages_search
from agents.knowledge.retrieval.base import Hit
from agents.knowledge.services import document_delete, knowledge_base_create
from tests.fake_openai import EMBEDDING_DIM, FakeOpenAI

pytestmark = pytest.mark.django_db


@pytest.fixture
def embeddings(settings):
    server = FakeOpenAI().start()
    settings.EMBEDDINGS_MODEL = "fake-embed"
    settings.EMBEDDINGS_BASE_URL = server.base_url
    settings.EMBEDDINGS_API_KEY = "embed-key"
    settings.EMBEDDINGS_BATCH_SIZE = 2
    settings.OPENAI_MAX_RETRIES = 0
    yield server
    server.stop()


@pytest.fixture
def kb(db):
    return knowledge_base_create(name="it")


def test_chunks_get_compact_vectors_in_batches(embeddings, kb, upload, settings):
    settings.KNOWLEDGE_CHUNK_CHARS, settings.KNOWLEDGE_CHUNK_OVERLAP = 60, 0
    text = "\n\n".join(f"Paragraph {i} about the office network and printers." for i in range(5))
    document = upload(kb, "it.md", text)
    chunks = list(Chunk.objects.filter(document=document))
    assert len(chunks) == 5 and all(c.vector_dim == EMBEDDING_DIM for c in chunks)
    assert all(len(bytes(c.vector)) == 2 * EMBEDDING_DIM for c in chunks)  # float16
    assert [len(r["input"]) for r in embeddings.embedding_requests] == [2, 2, 1]
    assert embeddings.embedding_requests[0]["model"] == "fake-embed"
    assert embeddings.authorizations[-1] == "Bearer embed-key"
    stored = dense.unpack(chunks[0].vector, EMBEDDING_DIM)
    assert abs(sum(x * x for x in stored) - 1) < 0.01  # unit length survives float16


def test_fusion_finds_what_lexical_search_misses(embeddings, kb, upload):
    upload(kb, "vpn.md", "# VPN\n\nConnect to the VPN before opening the intranet.")
    upload(kb, "lunch.md", "# Lunch\n\nThe canteen serves noodles on Monday.")
    typo = "conect vpnn intranett"
    assert dense.enabled() and passages_search(kb_ids=[kb.pk], query=typo)[0].title == "vpn"


def test_lexical_only_without_embeddings_model(kb, upload, settings):
    settings.EMBEDDINGS_MODEL = ""
    upload(kb, "vpn.md", "# VPN\n\nConnect to the VPN before opening the intranet.")
    assert passages_search(kb_ids=[kb.pk], query="conect vpnn intranett") == []
    assert Chunk.objects.get().vector is None


def test_embedding_failure_indexes_lexically_and_search_still_answers(embeddings, kb, upload):
    embeddings.embeddings_status = 500
    document = upload(kb, "vpn.md", "# VPN\n\nConnect to the VPN first.")
    assert document.status == "indexed" and "lexical only" in document.status_detail
    assert passages_search(kb_ids=[kb.pk], query="VPN")[0].document_id == document.pk


def test_vectors_of_another_model_are_ignored(embeddings, kb, upload, settings):
    upload(kb, "vpn.md", "# VPN\n\nConnect to the VPN before opening the intranet.")
    settings.EMBEDDINGS_MODEL = "another-model"
    assert dense.search(kb_ids=[kb.pk], query="vpn", limit=5) == []


def test_reciprocal_rank_fusion_rewards_agreement():
    lexical = [Hit(1, 9.0), Hit(2, 5.0), Hit(3, 1.0)]
    vectors = [Hit(2, 0.9), Hit(4, 0.8), Hit(3, 0.1)]
    assert [h.chunk_id for h in dense.fuse(lexical, vectors)] == [2, 3, 1, 4]


def test_vector_cache_follows_new_and_deleted_documents(embeddings, kb, upload):
    first = upload(kb, "vpn.md", "# VPN\n\nConnect to the VPN before opening the intranet.")
    assert {h.chunk_id for h in dense.search(kb_ids=[kb.pk], query="vpn", limit=5)} == set(
        first.chunks.values_list("id", flat=True)
    )
    second = upload(kb, "wifi.md", "# Wifi\n\nThe guest wifi password changes weekly.")
    found = {h.chunk_id for h in dense.search(kb_ids=[kb.pk], query="wifi", limit=5)}
    assert set(second.chunks.values_list("id", flat=True)) <= found
    document_delete(document=first)
    found = {h.chunk_id for h in dense.search(kb_ids=[kb.pk], query="vpn", limit=5)}
    assert found == set(second.chunks.values_list("id", flat=True))
