"""The agent form in a browser: find a tool by searching, give it with its approval toggle,
try the unsaved form in the preview chat (the offline model), save; screenshots of the form
in light and dark, 1280 and 390 px, English and 繁體中文."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents.models import Agent
from tests.e2e.test_browser_admin_map import admin_sign_in, problems
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db(transaction=True)

SHOTS = Path("/tmp/shots/h7a")


def shots(page, name: str) -> None:
    """The page at 1280 and 390 px, light and dark, under SHOTS."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width, height, size in ((1280, 900, "1280"), (390, 844, "390")):
        page.set_viewport_size({"width": width, "height": height})
        page.wait_for_timeout(300)
        for scheme in ("light", "dark"):
            page.emulate_media(color_scheme=scheme)
            page.screenshot(path=str(SHOTS / f"{name}-{size}-{scheme}.png"), full_page=True)
            for part, selector in (("tools", ".tool-picker"), ("preview", "#agent-preview")):
                page.locator(selector).screenshot(
                    path=str(SHOTS / f"{name}-{size}-{scheme}-{part}.png")
                )
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})


def test_an_admin_picks_tools_previews_the_draft_and_saves(db, start_asgi_server, browser_page):
    make_user("root", is_staff=True, is_superuser=True)
    helper = make_agent(
        "helper", provider="offline", system_prompt="Be helpful.", tool_keys=["calculate"]
    )
    server = start_asgi_server()
    page = browser_page
    page.set_viewport_size({"width": 1280, "height": 900})
    admin_sign_in(page, server.url)
    url = f"{server.url}/admin/agents/agent/{helper.pk}/change/"
    page.goto(url)
    picker = page.locator(".tool-picker")
    search = picker.locator(".tool-picker-search")
    search.wait_for()

    # Search narrows the one list; Enter in the search box does not save the form.
    search.fill("create_task")
    row = picker.locator(".tool-row", has=page.locator("input[value=create_task]"))
    assert row.is_visible()
    assert not picker.locator(".tool-row", has=page.locator("input[value=calculate]")).is_visible()
    search.press("Enter")
    assert page.url == url

    # Keyboard: Tab to the tool's tick, Space gives it; its approval toggle turns approval on.
    search.focus()
    for _ in range(12):  # past "ticked only", the approval switch, other matches' controls
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.value") == "create_task":
            break
    assert page.evaluate("document.activeElement.name") == "tool_keys"
    page.keyboard.press("Space")
    assert row.locator("input[name=tool_keys]").is_checked()
    row.locator("input[name=approval_tool_keys]").check()
    assert page.locator("#id_require_approval").is_checked()
    search.fill("")
    assert "2 of" in picker.locator(".tool-picker-count").inner_text()

    # The model field offers the provider's models.
    page.wait_for_function(
        "document.querySelector('#id_model-options option[value=offline]') !== null"
    )

    # The preview runs the unsaved form: a changed prompt, the ticked tools, the offline model.
    page.fill("#id_system_prompt", "Unsaved prompt.")
    page.fill("#id_preview_message", "what is 6*7")
    page.click(".agent-preview-go")
    trace = page.locator(".agent-preview-trace")
    trace.wait_for(timeout=30_000)
    answer = page.locator(".agent-preview-answer .agent-preview-text").inner_text()
    assert "42" in answer
    assert "/admin/delegation/run/" in trace.get_attribute("href")
    live = Agent.objects.get(pk=helper.pk)
    assert live.system_prompt == "Be helpful." and live.version == helper.version
    page.locator("#agent-preview").scroll_into_view_if_needed()
    shots(page, "agent-form-preview-en")

    page.click("input[name=_continue]")
    page.wait_for_selector("ul.messagelist")
    saved = Agent.objects.get(pk=helper.pk)
    assert saved.tool_keys == ["calculate", "create_task"]
    assert saved.require_approval and saved.approval_tool_keys == ["create_task"]
    assert saved.system_prompt == "Unsaved prompt."
    page.goto(url)
    page.locator(".tool-picker-search").wait_for()
    shots(page, "agent-form-en")

    page.set_extra_http_headers({"Accept-Language": "zh-Hant"})
    page.goto(url)
    page.locator(".tool-picker-search").wait_for()
    assert page.locator("html").get_attribute("lang") == "zh-hant"
    shots(page, "agent-form-zh-hant")
    assert problems(page) == []
