"""REST: knowledge bases and documents for staff (multipart upload, list, delete); 403 else."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from agents.knowledge.models import Document, KnowledgeBase
from agents.models import Agent
from tests.api.conftest import token_client
from tests.factories import grant, make_agent, make_user, model_perms

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    """A staff user who holds every permission on knowledge bases and documents."""
    staffer = make_user("staffer", is_staff=True)
    return token_client(
        grant(staffer, *model_perms("knowledge.knowledgebase", "knowledge.document"))
    )


@pytest.fixture
def plain(db):
    return token_client(make_user("plain"))


@pytest.fixture
def kb(staff):
    make_agent("hr")
    created = staff.post(
        "/api/v1/knowledge-bases/", {"name": "hr", "agents": ["hr"]}, format="json"
    )
    assert created.status_code == 201, created.json()
    return created.json()


def post_file(client, kb_id, name, content: bytes, **fields):
    return client.post(
        f"/api/v1/knowledge-bases/{kb_id}/documents/",
        {"file": SimpleUploadedFile(name, content), **fields},
        format="multipart",
    )


def test_staff_create_list_and_read_knowledge_bases(staff, kb):
    assert kb["display_name"] == "Hr" and kb["agents"] == ["hr"] and kb["access_group"] is None
    assert [k["name"] for k in staff.get("/api/v1/knowledge-bases/").json()] == ["hr"]
    assert staff.get(f"/api/v1/knowledge-bases/{kb['id']}/").json()["name"] == "hr"
    missing = staff.get("/api/v1/knowledge-bases/999999/")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "knowledge_base_not_found"


def test_bad_knowledge_base_fields_are_named(staff, kb):
    answer = staff.post(
        "/api/v1/knowledge-bases/",
        {"name": "hr", "agents": ["nobody"], "access_permission": "x.y"},
        format="json",
    )
    assert answer.status_code == 400
    assert set(answer.json()["error"]["details"]) == {"name", "agents", "access_permission"}


def test_upload_is_accepted_queued_then_indexed(staff, kb, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        answer = post_file(
            staff,
            kb["id"],
            "leave.md",
            "# 病假\n\n病假三十日。".encode(),
            title="人資假勤規定",
            source="wiki/hr",
            effective_date="2026-09-01",
        )
    assert answer.status_code == 202, answer.json()
    body = answer.json()
    assert (body["status"], body["version"], body["effective_date"]) == ("queued", 1, "2026-09-01")
    listed = staff.get(f"/api/v1/knowledge-bases/{kb['id']}/documents/").json()["results"]
    assert (
        listed[0]["status_text"] == "indexed with 1 chunks" and listed[0]["title"] == "人資假勤規定"
    )


@pytest.mark.parametrize(
    ("name", "content", "status", "code"),
    [
        ("a.exe", b"MZ", 415, "unsupported_file"),
        ("a.md", b"", 400, "empty_file"),
        ("a.md", b"x" * 101, 413, "file_too_large"),
    ],
)
def test_refused_uploads(staff, kb, settings, name, content, status, code):
    settings.KNOWLEDGE_MAX_FILE_BYTES = 100
    answer = post_file(staff, kb["id"], name, content)
    assert answer.status_code == status and answer.json()["error"]["code"] == code
    assert not Document.objects.exists()


def test_duplicate_upload_is_a_conflict(staff, kb):
    assert post_file(staff, kb["id"], "a.md", b"same").status_code == 202
    again = post_file(staff, kb["id"], "b.md", b"same")
    assert again.status_code == 409 and again.json()["error"]["code"] == "duplicate_document"
    assert again.json()["error"]["details"]["version"] == 1


def test_upload_without_a_file_is_invalid(staff, kb):
    answer = staff.post(f"/api/v1/knowledge-bases/{kb['id']}/documents/", {}, format="multipart")
    assert answer.status_code == 400 and "file" in answer.json()["error"]["details"]


def test_delete_a_document(staff, kb):
    document_id = post_file(staff, kb["id"], "a.md", b"text").json()["id"]
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents/{document_id}/"
    assert staff.get(url).json()["id"] == document_id
    assert staff.delete(url).status_code == 204
    again = staff.delete(url)
    assert again.status_code == 404 and again.json()["error"]["code"] == "document_not_found"


def test_a_document_of_another_knowledge_base_is_not_found(staff, kb):
    other = KnowledgeBase.objects.create(name="finance", display_name="Finance")
    document_id = post_file(staff, other.pk, "a.md", b"text").json()["id"]
    url = f"/api/v1/knowledge-bases/{kb['id']}/documents/{document_id}/"
    assert staff.delete(url).status_code == 404 and Document.objects.filter(pk=document_id).exists()


def test_non_staff_are_refused_everywhere(plain, kb):
    for method, url in [
        ("get", "/api/v1/knowledge-bases/"),
        ("post", "/api/v1/knowledge-bases/"),
        ("get", f"/api/v1/knowledge-bases/{kb['id']}/"),
        ("get", f"/api/v1/knowledge-bases/{kb['id']}/documents/"),
        ("post", f"/api/v1/knowledge-bases/{kb['id']}/documents/"),
        ("delete", f"/api/v1/knowledge-bases/{kb['id']}/documents/1/"),
    ]:
        answer = getattr(plain, method)(url)
        assert answer.status_code == 403, url
        assert answer.json()["error"]["code"] == "permission_denied"


def test_endpoints_are_in_the_openapi_schema(staff):
    paths = staff.get("/api/schema/", HTTP_ACCEPT="application/json").json()["paths"]
    upload = paths["/api/v1/knowledge-bases/{kb_id}/documents/"]["post"]
    assert "multipart/form-data" in upload["requestBody"]["content"]
    assert "delete" in paths["/api/v1/knowledge-bases/{kb_id}/documents/{document_id}/"]
    assert "/api/v1/knowledge-bases/{kb_id}/" in paths


def test_agents_linked_by_a_new_base_count_as_changed(staff):
    """What a run pins of an agent includes its knowledge: linking marks the agent saved."""
    hr, other = make_agent("hr"), make_agent("other")
    created = staff.post(
        "/api/v1/knowledge-bases/", {"name": "hr", "agents": ["hr"]}, format="json"
    )
    assert created.status_code == 201
    hr_after, other_after = (Agent.objects.get(pk=a.pk) for a in (hr, other))
    assert hr_after.updated_at > hr.updated_at and other_after.updated_at == other.updated_at
