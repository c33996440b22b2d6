"""kb_import (idempotent by content hash, new versions, refused files) and the demo knowledge."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from agents.knowledge.demo import knowledge_seed_demo
from agents.knowledge.models import Document, KnowledgeBase
from agents.knowledge.retrieval import passages_search
from agents.knowledge.selectors import documents_current, knowledge_bases_for
from agents.knowledge.services import knowledge_base_create
from tests.factories import make_agent, make_user
from tests.knowledge.files import pdf_without_text

pytestmark = pytest.mark.django_db


def run(*args) -> str:
    out = StringIO()
    call_command("kb_import", *args, stdout=out)
    return out.getvalue()


def test_import_a_folder_twice_adds_nothing_the_second_time(tmp_path, settings):
    settings.KNOWLEDGE_MAX_FILE_BYTES = 1000
    knowledge_base_create(name="hr")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "leave.md").write_text("# 特休\n\n特休七日。", encoding="utf-8")
    (tmp_path / "policy.txt").write_text("Expense claims within 30 days.", encoding="utf-8")
    (tmp_path / "scan.pdf").write_bytes(pdf_without_text())
    (tmp_path / "huge.txt").write_bytes(b"x" * 1001)
    (tmp_path / "image.png").write_bytes(b"\x89PNG")
    first = run(str(tmp_path), "--kb", "hr")
    assert "hr: 5 files: 2 indexed, 1 failed, 1 skipped, 1 refused" in first
    assert "no text layer" in first and "limit is 1000" in first
    second = run(str(tmp_path), "--kb", "hr")
    assert "0 indexed" in second and "already imported" in second
    assert Document.objects.count() == 3
    (tmp_path / "rules" / "leave.md").write_text("# 特休\n\n特休十日。", encoding="utf-8")
    assert "“leave” v2" in run(str(tmp_path), "--kb", "hr")
    kb = KnowledgeBase.objects.get(name="hr")
    assert [p.text for p in passages_search(kb_ids=[kb.pk], query="特休")] == ["特休十日。"]


def test_import_needs_an_existing_knowledge_base_or_create(tmp_path):
    (tmp_path / "a.md").write_text("hello", encoding="utf-8")
    with pytest.raises(CommandError, match="--create"):
        run(str(tmp_path), "--kb", "nope")
    assert "1 indexed" in run(str(tmp_path), "--kb", "nope", "--create")
    with pytest.raises(CommandError, match="does not exist"):
        run(str(tmp_path / "missing"), "--kb", "nope")


def test_demo_knowledge_answers_the_demo_questions_for_the_demo_user():
    demo = make_user("demo")
    finance_agent, hr_agent = make_agent("finance"), make_agent("hr")
    knowledge_seed_demo()
    knowledge_seed_demo()  # idempotent
    assert Document.objects.count() == 5
    finance = knowledge_bases_for(agent_names_or_ids=[finance_agent.pk], user=demo)
    latest = documents_current(kb_ids=[kb.pk for kb in finance], limit=1)[0]
    assert (latest.title, latest.effective_date.isoformat()) == (
        "2026年第三季財務報告",
        "2026-10-15",
    )
    hr = knowledge_bases_for(agent_names_or_ids=[hr_agent.pk], user=demo)
    best = passages_search(kb_ids=[kb.pk for kb in hr], query="人資假勤規定")[0]
    assert best.title == "人資假勤規定"
    outsider = make_user("outsider")
    assert knowledge_bases_for(agent_names_or_ids=["finance"], user=outsider) == []
