"""The knowledge admin's tools in a browser: two files dropped on the upload page (one refused,
the other added), a document's chunk preview, and a test search as two users; screenshots in
light and dark, 1280 and 390 px, English and 繁體中文."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group

from agents.knowledge.models import Document
from agents.knowledge.services import document_upload, knowledge_base_create
from tests.e2e.test_browser_admin_map import admin_sign_in, problems
from tests.factories import make_user
from tests.knowledge.conftest import FINANCE_REPORT, HR_RULES

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h9")

DROP_TWO_FILES = """(zone) => {
  const data = new DataTransfer();
  data.items.add(new File(["# 差旅規定\\n\\n## 住宿\\n\\n出差住宿每晚以三千元為限。"], "travel.md",
                          {type: "text/markdown"}));
  data.items.add(new File(["MZ not a document"], "setup.exe", {type: "application/octet-stream"}));
  for (const type of ["dragenter", "dragover", "drop"]) {
    zone.dispatchEvent(new DragEvent(type, {dataTransfer: data, bubbles: true, cancelable: true}));
  }
}"""


def shots(page, name: str) -> None:
    """The page at 1280 and 390 px, light and dark, under SHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height, size in ((1280, 900, "1280"), (390, 844, "390")):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)  # the sidebar slides as the layout changes
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(SHOTS / f"{name}-{size}-{scheme}.png"), full_page=True)
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})


def no_sideways_scroll(page) -> bool:
    """Whether the page fits the viewport's width (nothing to scroll sideways)."""
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


@pytest.fixture
def finance(db):
    readers = Group.objects.create(name="finance-readers")
    kb = knowledge_base_create(
        name="finance",
        display_name="Finance documents",
        display_names={"zh-hant": "財務文件", "en": "Finance documents"},
        access_group=readers,
    )
    document_upload(
        kb=kb,
        filename="q3.md",
        data=FINANCE_REPORT.encode(),
        title="2026年第三季財務報告",
        background=False,
    )
    document_upload(kb=kb, filename="leave.md", data=HR_RULES.encode(), background=False)
    make_user("root", is_staff=True, is_superuser=True)
    make_user("reader").groups.add(readers)
    make_user("outsider")
    return kb


def test_an_admin_drops_two_files_previews_chunks_and_tests_retrieval(
    finance, start_asgi_server, browser_page
):
    server = start_asgi_server()
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    admin_sign_in(page, server.url)

    # The knowledge base's page links the upload; two files dropped on the zone are listed.
    page.goto(f"{server.url}/admin/knowledge/knowledgebase/{finance.pk}/change/")
    page.click("text=Upload documents")
    zone = page.locator("[data-drop-zone]")
    zone.wait_for()
    page.wait_for_selector("[data-drop-zone].is-live")

    # More files than the server takes at once (here made 1) are not sent: the page says why.
    zone.evaluate("(zone) => { zone.dataset.maxFiles = '1'; }")
    page.evaluate("() => { window.maxFilesReloaded = false; }")
    zone.evaluate(DROP_TWO_FILES)
    assert "At most 1 file can" in page.locator("[data-too-many]").inner_text()
    page.click("#kb-upload-form input[type=submit]")
    assert page.locator("#upload-outcomes").count() == 0
    assert page.evaluate("window.maxFilesReloaded") is False  # still the same page
    assert not Document.objects.filter(filename="travel.md").exists()

    zone.evaluate("(zone) => { zone.dataset.maxFiles = '100'; }")
    zone.evaluate(DROP_TWO_FILES)
    assert not page.locator("[data-too-many]").is_visible()
    chosen = page.locator("[data-chosen]")
    assert "2 files chosen" in chosen.inner_text()
    assert "travel.md" in chosen.inner_text() and "setup.exe" in chosen.inner_text()
    page.click("#kb-upload-form input[type=submit]")

    # Each file says what became of it; the bad one did not lose the good one.
    page.wait_for_selector("#upload-outcomes")
    travel = page.locator("tr.kb-outcome[data-file='travel.md']")
    setup = page.locator("tr.kb-outcome[data-file='setup.exe']")
    assert travel.get_attribute("data-outcome") == "added"
    assert setup.get_attribute("data-outcome") == "refused"
    assert "not a supported type" in setup.inner_text()
    assert Document.objects.filter(kb=finance, filename="travel.md").exists()
    assert not Document.objects.filter(filename="setup.exe").exists()
    assert no_sideways_scroll(page)
    shots(page, "upload-en")

    # The document's chunks, as retrieval stores them.
    report = Document.objects.get(kb=finance, title="2026年第三季財務報告")
    page.goto(f"{server.url}/admin/knowledge/document/{report.pk}/change/")
    page.wait_for_selector("#chunks .kb-chunk")
    assert "2026年第三季財務報告 › 營收" in page.locator("#chunks").inner_text()
    shots(page, "chunks-en")

    # A test search as a member of the readers' group, then as someone outside it.
    search = f"{server.url}/admin/knowledge/knowledgebase/{finance.pk}/search/"
    page.goto(search)
    page.fill("#id_query", "營收")
    page.fill("#id_username", "rea")
    page.wait_for_selector("#search-as-users option", state="attached")  # suggested as typed
    assert page.locator("#search-as-users option").first.get_attribute("value") == "reader"
    page.fill("#id_username", "reader")
    page.click("#kb-search-form input[type=submit]")
    page.wait_for_selector(".kb-passage")
    first = page.locator(".kb-passage").first.inner_text()
    assert "一億二千萬元" in first and "version 1" in first
    assert no_sideways_scroll(page)
    shots(page, "search-en")
    page.goto(f"{search}?query=營收&username=outsider")
    assert "outsider may not read" in page.locator("#search-refused").inner_text()
    assert page.locator(".kb-passage").count() == 0
    shots(page, "search-refused-en")

    # The same pages in Traditional Chinese.
    page.set_extra_http_headers({"Accept-Language": "zh-Hant"})
    page.goto(f"{server.url}/admin/knowledge/knowledgebase/{finance.pk}/upload/")
    assert page.locator("html").get_attribute("lang") == "zh-hant"
    shots(page, "upload-zh-hant")
    page.goto(f"{server.url}/admin/knowledge/document/{report.pk}/change/")
    shots(page, "chunks-zh-hant")
    page.goto(f"{search}?query=營收&username=reader")
    page.wait_for_selector(".kb-passage")
    shots(page, "search-zh-hant")
    assert problems(page) == []
