"""Admin: upload with status, refused files as form errors, re-index action, read-only chunks."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from agents.knowledge.models import Chunk, Document, DocumentStatus
from agents.knowledge.services import knowledge_base_create
from agents.models import Agent
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, db):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


@pytest.fixture
def kb(db):
    return knowledge_base_create(name="hr", agents=[make_agent("hr")])


def add(admin_client, kb, name, content: bytes, **fields):
    data = {"kb": kb.pk, "upload": SimpleUploadedFile(name, content), "title": "", "source": ""}
    data.update(effective_date="2026-10-15", **fields)
    return admin_client.post(reverse("admin:knowledge_document_add"), data)


def test_upload_in_admin_indexes_and_shows_the_status(
    admin_client, kb, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        answer = add(admin_client, kb, "leave.md", "# 特休\n\n特休七日。".encode(), title="假勤")
    assert answer.status_code == 302
    document = Document.objects.get()
    assert document.status == DocumentStatus.INDEXED and document.uploaded_by.username == "root"
    listing = admin_client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "indexed with 1 chunks" in listing
    page = admin_client.get(reverse("admin:knowledge_knowledgebase_change", args=[kb.pk]))
    assert "假勤" in page.content.decode() and "indexed with 1 chunks" in page.content.decode()


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [("a.exe", b"MZ", "not a supported type"), ("a.md", b"", "empty")],
)
def test_refused_files_are_form_errors(admin_client, kb, name, content, words):
    answer = add(admin_client, kb, name, content)
    assert answer.status_code == 200 and words in answer.content.decode()
    assert not Document.objects.exists()


def test_duplicate_file_is_a_form_error(admin_client, kb):
    assert add(admin_client, kb, "a.md", b"same").status_code == 302
    answer = add(admin_client, kb, "b.md", b"same")
    assert answer.status_code == 200 and "already in hr" in answer.content.decode()
    assert Document.objects.count() == 1


def test_failed_document_shows_the_reason_and_reindex_action_queues_it(
    admin_client, kb, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        add(admin_client, kb, "blank.txt", b"  \n\n ")
    document = Document.objects.get()
    listing = admin_client.get(reverse("admin:knowledge_document_changelist")).content.decode()
    assert "failed: The file contains no text." in listing
    with django_capture_on_commit_callbacks(execute=True):
        admin_client.post(
            reverse("admin:knowledge_document_changelist"),
            {"action": "reindex", "_selected_action": [document.pk]},
        )
    document.refresh_from_db()
    assert document.status == DocumentStatus.FAILED  # still no text, but indexed again


def test_superseded_filter_and_chunks_are_read_only(
    admin_client, kb, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        add(admin_client, kb, "a.md", b"first version", title="Policy")
    with django_capture_on_commit_callbacks(execute=True):
        add(admin_client, kb, "b.md", b"second version", title="Policy")
    url = reverse("admin:knowledge_document_changelist") + "?superseded__exact=1"
    assert "superseded by version 2" in admin_client.get(url).content.decode()
    chunk = Chunk.objects.get()
    assert (
        admin_client.get(reverse("admin:knowledge_chunk_change", args=[chunk.pk])).status_code
        == 200
    )
    assert admin_client.get(reverse("admin:knowledge_chunk_add")).status_code == 403


def kb_form(kb, agents) -> dict:
    """The knowledge base's change form as the admin posts it, with these agents linked."""
    return {
        "name": kb.name,
        "display_name": kb.display_name,
        "description": kb.description,
        "access_group": "",
        "access_permission": "",
        "agents": [a.pk for a in agents],
        "documents-TOTAL_FORMS": "0",
        "documents-INITIAL_FORMS": "0",
        "documents-MIN_NUM_FORMS": "0",
        "documents-MAX_NUM_FORMS": "1000",
    }


def test_agents_linked_unlinked_or_losing_a_deleted_base_count_as_changed(admin_client, kb):
    """An agent's knowledge is part of what a run pins of it: linking or unlinking a base, in
    any of the admin's ways, marks it saved (a delegation taken as offered is checked again)."""
    legal, other = make_agent("legal"), make_agent("other")
    seen = {a.name: a.updated_at for a in Agent.objects.all()}

    def changed() -> set[str]:
        now = {a.name: a.updated_at for a in Agent.objects.all()}
        moved = {name for name, at in now.items() if at != seen[name]}
        seen.update(now)
        return moved

    change = reverse("admin:knowledge_knowledgebase_change", args=[kb.pk])
    assert admin_client.post(change, kb_form(kb, [legal])).status_code == 302
    assert changed() == {"hr", "legal"}  # one unlinked, one linked
    assert admin_client.post(change, kb_form(kb, [legal])).status_code == 302
    assert changed() == set()  # saved with the same agents
    delete = reverse("admin:knowledge_knowledgebase_delete", args=[kb.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert changed() == {"legal"}
    both = [knowledge_base_create(name=n, agents=[other]) for n in ("a", "b")]
    assert changed() == {"other"}
    listing = reverse("admin:knowledge_knowledgebase_changelist")
    chosen = {"action": "delete_selected", "_selected_action": [b.pk for b in both], "post": "yes"}
    assert admin_client.post(listing, chosen).status_code == 302
    assert changed() == {"other"}
