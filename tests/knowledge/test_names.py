"""Knowledge bases by name in each language: edited in admin as text, over REST as objects,
and read by people (citations' passages) in their language."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import translation

from agents.knowledge.models import KnowledgeBase
from agents.knowledge.retrieval import passages_search
from agents.knowledge.services import knowledge_base_create
from tests.api.conftest import token_client
from tests.factories import grant, make_user, model_perms
from tests.knowledge.conftest import HR_RULES
from tests.knowledge.test_admin import kb_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client, db):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def test_the_admin_edits_each_languages_name_and_description_as_text(admin_client, kb):
    change = reverse("admin:knowledge_knowledgebase_change", args=[kb.pk])
    form = kb_form(kb, []) | {
        "display_names_zh-hant": "人資規定",
        "display_names_zh-hans": " ",  # blank: not set, converted from the Traditional one
        "descriptions_en": "Leave and attendance rules.",
    }
    assert admin_client.post(change, form).status_code == 302
    kb.refresh_from_db()
    assert kb.display_names == {"zh-hant": "人資規定"}
    assert kb.descriptions == {"en": "Leave and attendance rules."}
    assert kb.name_in("zh-hans") == "人资规定"
    page = admin_client.get(change).content.decode()
    assert 'value="人資規定"' in page and "繁體中文" in page


def test_a_name_too_long_is_a_form_error_and_nothing_changes(admin_client, kb):
    change = reverse("admin:knowledge_knowledgebase_change", args=[kb.pk])
    answer = admin_client.post(change, kb_form(kb, []) | {"display_names_en": "x" * 121})
    assert answer.status_code == 200 and "the limit is 120" in answer.content.decode()
    kb.refresh_from_db()
    assert kb.display_names == {}


def test_the_list_shows_the_name_in_the_admins_language(admin_client):
    knowledge_base_create(name="finance", display_names={"zh-hans": "财务文件"})
    page = admin_client.get(
        reverse("admin:knowledge_knowledgebase_changelist"), HTTP_ACCEPT_LANGUAGE="zh-TW"
    )
    assert "財務文件" in page.content.decode()


def test_names_per_language_round_trip_over_rest():
    staff = token_client(
        grant(make_user("staffer", is_staff=True), *model_perms("knowledge.knowledgebase"))
    )
    body = {
        "name": "finance",
        "display_names": {"zh-hant": "財務文件", "en": "Finance documents"},
        "descriptions": {"zh-hans": "每季财务报告。"},
    }
    created = staff.post("/api/v1/knowledge-bases/", body, format="json")
    assert created.status_code == 201, created.json()
    read = staff.get(f"/api/v1/knowledge-bases/{created.json()['id']}/").json()
    assert read["display_names"] == body["display_names"]
    assert read["descriptions"] == body["descriptions"]
    bad = staff.post(
        "/api/v1/knowledge-bases/",
        {"name": "legal", "display_names": {"ja": "法務"}},
        format="json",
    )
    assert bad.status_code == 400 and "display_names" in bad.json()["error"]["details"]
    assert not KnowledgeBase.objects.filter(name="legal").exists()


def test_a_passage_names_its_knowledge_base_in_the_readers_language(upload):
    kb = knowledge_base_create(
        name="hr", display_name="HR rules", display_names={"zh-hans": "人资规定"}
    )
    upload(kb, "leave.md", HR_RULES)
    with translation.override("zh-hant"):
        [passage, *_] = passages_search(kb_ids=[kb.pk], query="病假")
    assert passage.kb == "hr" and passage.kb_name == "人資規定"
    with translation.override("en"):
        [passage, *_] = passages_search(kb_ids=[kb.pk], query="病假")
    assert passage.as_dict()["kb_name"] == "HR rules"
