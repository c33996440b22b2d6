"""Model output in a real browser: Markdown renders, nothing the model writes runs or loads."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import screenshot, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, text

pytestmark = pytest.mark.django_db(transaction=True)

# A hostile answer, streamed in pieces that cut through the Markdown.
HOSTILE = [
    "## Safe *rendering*\n\nHere is <script>window.pwned = 'script'; alert('script')</scr",
    "ipt> inline.\n\nAn image tag: <img src=x onerror=\"window.pwned='img'; alert('img')\">\n\n",
    "A [bad link](javascript:alert('link')) and a [good link](https://example.org/docs?a=1) ",
    "and a [data link](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==).\n\n",
    "![chart](http://example.com/a.png)\n\n",
    "```python\nprint('<b>not bold</b>')\n```\n\n",
    "- **bold** item\n- `<code>` item\n\n> quoted <iframe src=https://example.com></iframe>",
]
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


@pytest.fixture
def fake_model(db) -> Iterator[FakeOpenAI]:
    """alice, an entry agent on the openai provider, and the fake server it talks to."""
    make_user("alice")
    make_agent(
        "assistant", display_name="Assistant", is_entry=True, provider="openai", model="fake"
    )
    server = FakeOpenAI().start()
    server.script(text(*HOSTILE))
    yield server
    server.stop()


def test_hostile_markdown_executes_and_loads_nothing(fake_model, start_asgi_server, browser_page):
    server = start_asgi_server(
        OPENAI_BASE_URL=fake_model.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    dialogs, requests = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in_as(page, server.url)
    response = page.goto(server.url + "/")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy and "'unsafe-inline'" not in policy
    page.wait_for_selector("#status[data-state=connected]")

    page.fill("#text", "show me something nasty")
    page.keyboard.press("Enter")
    answer = "#transcript .msg.agent[data-status=completed] .body"
    page.wait_for_selector(answer)
    page.wait_for_timeout(300)  # give anything that would load or run the time to do it

    def check_inert() -> None:
        assert dialogs == []
        assert page.evaluate("window.pwned") is None
        body = page.locator(answer)
        for tag in ("script", "img", "iframe", "[onerror]", "a[href^=javascript]", "a[href^=data]"):
            assert body.locator(tag).count() == 0, tag
        shown = body.inner_text()
        assert "<script>window.pwned = 'script'; alert('script')</script>" in shown
        assert "<img src=x onerror=" in shown
        assert "[bad link](javascript:alert('link'))" in shown
        assert "[data link](data:text/html;base64," in shown
        links = body.locator("a").evaluate_all(
            "as => as.map(a => [a.getAttribute('href'), a.rel, a.target, a.textContent])"
        )
        assert links == [
            ["https://example.org/docs?a=1", "noopener noreferrer", "_blank", "good link"],
            # a bare URL becomes a link too (it was inside the <iframe> text)
            ["https://example.com/", "noopener noreferrer", "_blank", "https://example.com"],
        ]
        assert body.locator("h3").inner_text() == "Safe rendering"
        assert body.locator("h3 em").inner_text() == "rendering"
        assert body.locator("li strong").inner_text() == "bold"
        assert body.locator("li code").inner_text() == "<code>"
        assert body.locator("blockquote").inner_text().startswith("quoted <iframe")
        assert body.locator(".code-block code").inner_text() == "print('<b>not bold</b>')"
        assert body.locator("button.load-image").inner_text() == "Load image from example.com"
        assert not [u for u in requests if "example.com" in u or u.endswith("/x")]

    check_inert()
    screenshot(page, "safe-rendering")

    page.click(f"{answer} .code-block button.copy")
    page.wait_for_selector(f"{answer} .code-block button.copy:text('Copied')")
    assert page.evaluate("navigator.clipboard.readText()") == "print('<b>not bold</b>')"

    page.reload()
    page.wait_for_selector(answer)
    page.wait_for_timeout(300)
    check_inert()  # the saved answer renders the same, and just as inert

    # A click, and only a click, loads the external image.
    page.route(
        "http://example.com/**", lambda route: route.fulfill(body=PNG, content_type="image/png")
    )
    page.click(f"{answer} button.load-image")
    image = page.locator(f"{answer} img.md-image")
    image.wait_for()
    assert image.get_attribute("src") == "http://example.com/a.png"
    assert image.get_attribute("referrerpolicy") == "no-referrer"
    page.wait_for_function("() => document.querySelector('img.md-image').complete")
    assert [u for u in requests if "example.com" in u] == ["http://example.com/a.png"]
    assert dialogs == [] and page.evaluate("window.pwned") is None
    assert page.console_errors == []


# Tricks against link and image filters, raw HTML and attribute escapes, each rendered by the
# page's own Markdown module in the signed-in page (under its CSP).
TRICKS = [
    "[a](java\tscript:alert(1))",
    "[a](JaVaScRiPt:alert(1))",
    "[a](&#106;avascript:alert(1))",
    "[a](javascript&colon;alert(1))",
    "<javascript:alert(1)>",
    "[a](vbscript:msgbox(1))",
    "[a](file:///etc/passwd)",
    "[a](//evil.example/x)",
    "[a](/relative/path)",
    "[ref]\n\n[ref]: javascript:alert(1)",
    '[a](https://ok.example/ "x\\" onmouseover=\\"alert(1)")',
    '[a](https://ok.example/"onmouseover=alert(1)//)',
    "![a](javascript:alert(1))",
    "![a](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    '![a" onerror="alert(1)](https://img.example/x.png)',
    "![a](//evil.example/x.png)",
    '<a href="javascript:alert(1)">raw</a> <svg onload=alert(1)> <style>*{}</style>',
    '```"><img src=x onerror=alert(1)>\ncode\n```',
    "| <b onclick=alert(1)>x</b> |\n|---|\n| <iframe srcdoc=x> |",
    "> <math><mi xlink:href=javascript:alert(1)>x</mi></math>",
    "&lt;script&gt;alert(1)&lt;/script&gt; &#60;img src=x onerror=alert(1)&#62;",
]


@pytest.fixture
def bob(db) -> None:
    """A user, written before the browser starts."""
    make_user("bob")


def test_link_image_and_html_tricks_stay_inert(bob, asgi_server, browser_page):
    page = browser_page
    dialogs, requests = [], []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    sign_in_as(page, asgi_server, "bob")
    found = page.evaluate(
        """async (tricks) => {
            const { renderMarkdown } = await import('/static/chat/markdown.js');
            const box = document.createElement('div');
            document.body.append(box);
            for (const trick of tricks) box.append(renderMarkdown(trick));
            await new Promise((resolve) => setTimeout(resolve, 300));
            const attrs = [...box.querySelectorAll('*')].flatMap((el) =>
                [...el.attributes].map((a) => `${el.tagName.toLowerCase()} ${a.name}`));
            return {
                tags: [...new Set([...box.querySelectorAll('*')].map((el) => el.tagName))].sort(),
                hrefs: [...box.querySelectorAll('[href]')].map((el) => el.getAttribute('href')),
                handlers: attrs.filter((a) => / (on|style|src|srcdoc|xlink)/.test(a)),
                text: box.textContent,
            };
        }""",
        TRICKS,
    )
    assert set(found["tags"]) <= {"A", "BR", "BUTTON", "CODE", "FIGCAPTION", "FIGURE", "P"} | {
        "BLOCKQUOTE",
        "DIV",
        "PRE",
        "SPAN",
        "TABLE",
        "TBODY",
        "TD",
        "TH",
        "THEAD",
        "TR",
    }, found["tags"]
    assert found["handlers"] == []
    assert found["hrefs"] == ["https://ok.example/", "https://ok.example/%22onmouseover=alert(1)//"]
    assert "<script>alert(1)</script>" in found["text"]  # entities decode to visible text
    assert '<a href="javascript:alert(1)">raw</a>' in found["text"]
    assert "Load image from img.example" in found["text"]
    assert dialogs == [] and page.evaluate("window.pwned") is None
    assert not [u for u in requests if "evil" in u or "img.example" in u or u.endswith("/x")]
    assert page.console_errors == []
