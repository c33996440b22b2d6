"""The knowledge admin's tools: many files at once (each with its outcome), the chunk preview of a
document, and a test search as a chosen user (their access rule decides what they get)."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from agents.knowledge.models import Document, DocumentStatus
from agents.knowledge.services import knowledge_base_create
from tests.factories import grant, make_user
from tests.knowledge.conftest import HR_RULES

pytestmark = pytest.mark.django_db


@pytest.fixture
def root_client(client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def upload_url(kb) -> str:
    return reverse("admin:knowledge_knowledgebase_upload", args=[kb.pk])


def search_url(kb) -> str:
    return reverse("admin:knowledge_knowledgebase_search", args=[kb.pk])


def outcomes(html: str) -> dict[str, str]:
    """{file name: outcome} as the results table lists them."""
    rows = re.findall(r'data-outcome="([a-z_]+)" data-file="([^"]*)"', html)
    return {name: outcome for outcome, name in rows}


def row_of(html: str, filename: str) -> str:
    """The results table's row of one file."""
    match = re.search(rf'data-file="{re.escape(filename)}">(.*?)</tr>', html, re.S)
    assert match, f"no row for {filename}"
    return match.group(1)


def test_many_files_each_report_their_own_outcome(
    root_client, kb, upload, settings, django_capture_on_commit_callbacks
):
    settings.KNOWLEDGE_MAX_FILE_BYTES = 2000
    upload(kb, "leave.md", HR_RULES, title="leave")
    upload(kb, "old.md", "# Old\n\nKept as it was.", title="kept")
    files = [
        SimpleUploadedFile("travel.md", "# 差旅\n\n出差前須先申請。".encode()),
        SimpleUploadedFile("leave.md", (HR_RULES + "\n## 婚假\n\n婚假八日。").encode()),
        SimpleUploadedFile("again.md", b"# Old\n\nKept as it was."),
        SimpleUploadedFile("tool.exe", b"MZ\x90\x00"),
        SimpleUploadedFile("huge.txt", b"x" * 2001),
        SimpleUploadedFile("scan.pdf", b"%PDF-1.4 this is not really a pdf"),
        SimpleUploadedFile("blank.md", b""),
    ]
    with django_capture_on_commit_callbacks(execute=True):
        answer = root_client.post(
            upload_url(kb), {"uploads": files, "effective_date": "2026-10-01"}
        )
    html = answer.content.decode()
    assert answer.status_code == 200
    assert outcomes(html) == {
        "travel.md": "added",
        "leave.md": "new_version",
        "again.md": "unchanged",
        "tool.exe": "refused",
        "huge.txt": "refused",
        "scan.pdf": "refused",
        "blank.md": "refused",
    }
    assert "not a supported type" in row_of(html, "tool.exe")
    assert "the limit is 2000" in row_of(html, "huge.txt")
    assert "cannot be read" in row_of(html, "scan.pdf")
    assert "is empty" in row_of(html, "blank.md")
    assert "“kept” version 1" in row_of(html, "again.md")
    assert "now version 2" in row_of(html, "leave.md")
    # The good files were stored and indexed; the refused ones left nothing behind.
    stored = {d.filename: d for d in Document.objects.filter(kb=kb, effective_date="2026-10-01")}
    assert set(stored) == {"travel.md", "leave.md"}
    assert stored["leave.md"].version == 2 and stored["leave.md"].uploaded_by.username == "root"
    assert all(d.status == DocumentStatus.INDEXED for d in stored.values())
    assert Document.objects.filter(kb=kb).count() == 4
    assert "Added: 1" in html and "Refused: 4" in html


def test_the_form_works_without_script_and_needs_a_file(root_client, kb):
    page = root_client.get(upload_url(kb)).content.decode()
    assert 'enctype="multipart/form-data"' in page and "csrfmiddlewaretoken" in page
    assert re.search(r'<input type="file" name="uploads"[^>]*multiple', page)
    answer = root_client.post(upload_url(kb), {"effective_date": ""})
    assert answer.status_code == 200 and "Choose at least one file" in answer.content.decode()
    assert not Document.objects.exists()


def test_upload_needs_csrf(kb):
    client = Client(enforce_csrf_checks=True)
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    answer = client.post(upload_url(kb), {"uploads": [SimpleUploadedFile("a.md", b"# A\n\nx")]})
    assert answer.status_code == 403 and not Document.objects.exists()


def test_upload_needs_staff_and_the_add_document_permission(client, kb):
    files = {"uploads": [SimpleUploadedFile("a.md", b"# A\n\ntext")]}
    client.force_login(make_user("someone"))  # not staff: the admin's login page
    answer = client.post(upload_url(kb), files)
    assert answer.status_code == 302 and "/login/" in answer["Location"]
    viewer = grant(make_user("viewer", is_staff=True), "knowledge.view_knowledgebase")
    client.force_login(viewer)
    assert client.get(upload_url(kb)).status_code == 403
    assert client.post(upload_url(kb), files).status_code == 403
    page = client.get(reverse("admin:knowledge_knowledgebase_change", args=[kb.pk]))
    assert upload_url(kb) not in page.content.decode()  # no link to what they may not do
    assert search_url(kb) in page.content.decode()
    grant(viewer, "knowledge.add_document")
    files = {"uploads": [SimpleUploadedFile("a.md", b"# A\n\ntext")]}
    answer = client.post(upload_url(kb), files)
    assert outcomes(answer.content.decode()) == {"a.md": "added"}
    page = client.get(reverse("admin:knowledge_knowledgebase_change", args=[kb.pk]))
    assert upload_url(kb) in page.content.decode()


def test_document_page_previews_its_chunks_paged(root_client, kb, upload, settings):
    settings.KNOWLEDGE_CHUNK_CHARS, settings.KNOWLEDGE_CHUNK_OVERLAP = 40, 0
    sick = "".join(f"第{n}條：病假須於三日內補交醫療證明。" for n in range(1, 60))
    document = upload(kb, "rules.md", f"# 人資假勤規定\n\n## 病假\n\n{sick}", title="假勤")
    assert document.chunk_count > 20
    url = reverse("admin:knowledge_document_change", args=[document.pk])
    page = root_client.get(url).content.decode()
    first = document.chunks.get(position=0)
    assert "#0" in page and "人資假勤規定 › 病假" in page
    assert first.text in page and f"{first.char_count} characters" in page
    assert 'data-position="20"' not in page  # the next page holds it
    assert f"{document.chunk_count} chunks" in page and "?chunks=2#chunks" in page
    second = root_client.get(url + "?chunks=2").content.decode()
    assert 'data-position="20"' in second and 'data-position="0"' not in second


def test_a_superseded_version_says_it_has_no_chunks(root_client, kb, upload):
    old = upload(kb, "a.md", "# A\n\nfirst", title="Policy")
    upload(kb, "b.md", "# A\n\nsecond", title="Policy")
    page = root_client.get(reverse("admin:knowledge_document_change", args=[old.pk]))
    assert "No chunks are stored for this version (superseded by version 2)" in (
        page.content.decode()
    )


def test_search_as_a_member_finds_passages_with_citations(root_client, corpus):
    finance = corpus["finance"]
    answer = root_client.get(search_url(finance), {"query": "營收", "username": "reader"})
    html = answer.content.decode()
    assert answer.status_code == 200 and "What reader would get" in html
    q3 = corpus["docs"]["q3"]
    assert "一億二千萬元" in html and "score " in html
    revenue = next(c for c in q3.chunks.all() if c.heading_path[-1] == "營收")
    assert f'data-chunk="{revenue.pk}"' in html
    assert f"Effective {q3.effective_date.isoformat()}" in html and "version 1" in html
    assert "2026年第三季財務報告 › 營收" in html  # the chip, as the chat labels it


def test_search_as_someone_outside_the_group_gets_nothing_and_why(root_client, corpus):
    make_user("outsider")
    finance = corpus["finance"]
    html = root_client.get(
        search_url(finance), {"query": "營收", "username": "outsider"}
    ).content.decode()
    assert "一億二千萬元" not in html and 'class="kb-passage"' not in html
    assert "outsider may not read" in html and "finance-readers" in html
    # The staff member themselves (a superuser) reads everything.
    html = root_client.get(search_url(finance), {"query": "營收"}).content.decode()
    assert "What root would get" in html and "一億二千萬元" in html


def test_search_as_another_user_needs_the_permission_to_view_users(client, corpus):
    staff = grant(make_user("kbstaff", is_staff=True), "knowledge.view_knowledgebase")
    client.force_login(staff)
    finance = corpus["finance"]
    form = client.get(search_url(finance)).content.decode()
    assert 'value="kbstaff"' in form and "<datalist" not in form  # no user suggestions
    html = client.get(search_url(finance), {"query": "營收", "username": "reader"})
    assert "needs the permission to view users" in html.content.decode()
    html = client.get(search_url(finance), {"query": "營收", "username": "kbstaff"})
    assert "kbstaff may not read" in html.content.decode()  # not in the finance group
    grant(staff, "auth.view_user")
    html = client.get(search_url(finance), {"query": "營收", "username": "reader"})
    assert "一億二千萬元" in html.content.decode()
    client.force_login(make_user("plain", is_staff=True))
    assert client.get(search_url(finance)).status_code == 403


def test_search_refuses_an_unknown_user_and_an_empty_query(root_client, corpus):
    html = root_client.get(
        search_url(corpus["hr"]), {"query": "病假", "username": "ghost"}
    ).content.decode()
    assert "No user is named ghost" in html
    html = root_client.get(
        search_url(corpus["hr"]), {"query": "??", "username": "root"}
    ).content.decode()
    assert "The search query is empty" in html


def test_user_suggestions_come_from_the_admin_autocomplete(root_client, corpus):
    answer = root_client.get(
        reverse("admin:autocomplete"),
        {
            "term": "rea",
            "app_label": "knowledge",
            "model_name": "document",
            "field_name": "uploaded_by",
        },
    )
    assert [r["text"] for r in answer.json()["results"]] == ["reader"]


def test_knowledge_base_page_links_its_tools(root_client):
    kb = knowledge_base_create(name="policies")
    page = root_client.get(reverse("admin:knowledge_knowledgebase_change", args=[kb.pk]))
    html = page.content.decode()
    assert upload_url(kb) in html and search_url(kb) in html
    assert "Upload documents" in html and "Test retrieval" in html
