"""Markdown in a real browser: inputs that were slow or crashed render and leave the page
usable; streaming keeps finished blocks and re-renders only the open one; a rich answer
renders in both themes and on a phone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.e2e.conftest import phone, screenshot, sign_in_as
from tests.factories import make_agent, make_user
from tests.fake_openai import FakeOpenAI, text

pytestmark = pytest.mark.django_db(transaction=True)

BRACKETS = "[" * 32_000
UNDERSCORES = "_x " * 10_000
NESTED = ">" * 8_000 + " deep"

RICH = """## Quarterly summary

Revenue grew **12 %** while costs stayed *flat*; ~~two~~ one surprise. See the
[report](https://example.org/q3) or https://example.com/notes.

### Next steps

1. Check the ledger
2. Review `budget.xlsx` with finance
   - travel
   - equipment
3. Send the summary

- [x] collect figures
- [ ] write the memo

| Item | Q2 | Q3 | Change |
|:-----|---:|---:|:------:|
| Revenue | 1,200 | 1,344 | +12 % |
| Costs | 800 | 800 | 0 % |

```python
def growth(before: float, after: float) -> float:
    return (after - before) / before * 100
```

> Figures are provisional until the audit closes.

![Revenue chart](https://example.com/chart.png)

---

Questions? Write to mailto:finance@example.org.
"""


def pieces(source: str, size: int) -> list[str]:
    """`source` cut into chunks of `size` characters (cuts fall anywhere, as a model's do)."""
    return [source[i : i + size] for i in range(0, len(source), size)]


@pytest.fixture
def fake_model(db) -> Iterator[FakeOpenAI]:
    """alice, an entry agent on the openai provider, and the fake server it talks to."""
    make_user("alice")
    make_agent(
        "assistant", display_name="Assistant", is_entry=True, provider="openai", model="fake"
    )
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def chat_page(fake_model, start_asgi_server, browser_page) -> object:
    """The chat page, signed in as alice, on a server whose model is `fake_model`."""
    server = start_asgi_server(
        OPENAI_BASE_URL=fake_model.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    page.page_errors = []
    page.on("pageerror", lambda error: page.page_errors.append(str(error)))
    sign_in_as(page, server.url)
    return page


def ask(page, question: str, answers: int) -> object:
    """Send `question` and wait until `answers` answers are complete; the body of the last."""
    page.fill("#text", question)
    page.keyboard.press("Enter")
    done = "#transcript .msg.agent[data-status=completed]"
    page.wait_for_function(f"n => document.querySelectorAll('{done}').length === n", arg=answers)
    return page.locator(f"{done} .body").nth(answers - 1)


def quote_depth(body) -> int:
    """How deeply blockquotes nest in `body`."""
    return body.evaluate(
        """body => Math.max(0, ...[...body.querySelectorAll('blockquote')].map(q => {
            let depth = 0;
            for (let n = q; n !== body; n = n.parentElement) depth += n.tagName === 'BLOCKQUOTE';
            return depth;
        }))"""
    )


def check_pathological(page) -> None:
    """The three answers show their text, nothing threw, the quotes nest a bounded depth."""
    bodies = page.locator("#transcript .msg.agent[data-status=completed] .body")
    assert bodies.count() == 3
    assert bodies.nth(0).text_content().count("[") == len(BRACKETS)
    assert bodies.nth(1).text_content().strip() == UNDERSCORES.strip()
    assert bodies.nth(1).locator("em, strong").count() == 0
    nested = bodies.nth(2)
    assert 1 < quote_depth(nested) <= 20
    shown = nested.text_content()
    assert shown.rstrip().endswith("deep") and shown.count(">") > 7_900  # kept, as text
    assert page.page_errors == [] and page.console_errors == []


def test_pathological_answers_render_and_the_page_stays_responsive(fake_model, chat_page):
    page = chat_page
    fake_model.script(
        text(*pieces(BRACKETS, 2_000)),
        text(*pieces(UNDERSCORES, 2_000)),
        text(*pieces(NESTED, 1_000)),
    )
    ask(page, "brackets", 1)
    ask(page, "underscores", 2)
    ask(page, "quotes", 3)
    check_pathological(page)
    screenshot(page, "markdown-pathological")

    # Still responsive: typing shows, a button works, the socket is up.
    page.fill("#text", "still here")
    assert page.input_value("#text") == "still here"
    page.click("#toggle-theme")
    assert page.get_attribute("html", "data-theme") == "dark"
    assert page.inner_text("#status") == "connected"

    page.reload()  # the saved answers render the same way from the snapshot
    page.wait_for_function(
        "() => document.querySelectorAll('.msg.agent[data-status=completed]').length === 3"
    )
    check_pathological(page)


# Streamed into a Transcript of the page's own modules, one delta at a time. After each delta,
# every block but the last two is recorded: those are final (a later block has started on a
# complete line), so they must survive to the end as the same nodes. The result must equal
# one render of the whole text.
STREAM = """
async ({ source, size }) => {
  const { Transcript } = await import('/static/chat/render.js');
  const agent = { kind: 'entry', name: 'a', display_name: 'A', depth: 0, path: ['a'] };
  const make = (id) => {
    const root = document.createElement('div');
    document.body.append(root);
    const transcript = new Transcript(root, { announce() {}, changed() {} });
    const base = { session_id: 's', run_id: `r-${id}`, message_id: id, agent };
    return { root, transcript, base };
  };
  const live = make(`live-${size}`);
  live.transcript.started({ ...live.base, type: 'message.started', data: {} });
  const body = live.root.querySelector('.body');
  const kept = new Set();
  let added = 0;
  new MutationObserver((records) => {
    for (const r of records) added += [...r.addedNodes].filter((n) => n.nodeType === 1).length;
  }).observe(body, { childList: true });
  for (let offset = 0; offset < source.length; offset += size) {
    const text = source.slice(offset, offset + size);
    live.transcript.delta({ ...live.base, type: 'message.delta', data: { text, offset } });
    [...body.children].slice(0, -2).forEach((node) => kept.add(node));
  }
  live.transcript.completed({ ...live.base, type: 'message.completed',
                              data: { text: source, status: 'completed' } });
  await new Promise((resolve) => setTimeout(resolve));
  const once = make(`once-${size}`);
  once.transcript.completed({ ...once.base, type: 'message.completed',
                              data: { text: source, status: 'completed' } });
  const lost = [...kept].filter((node) => node.parentNode !== body).length;
  const same = body.innerHTML === once.root.querySelector('.body').innerHTML;
  return { kept: kept.size, lost, added, same };
}
"""

TRICKY = """Intro line
#hashtag is text, not a heading
***not a rule*** but bold italic

Setext title
------------

- item one
- item two

  still item two
- item three
1. one
2. two

A paragraph before a table
| a | b |
|---|---|
| 1 | 2 |

```
fenced

with a blank line
```

    indented code

> quote
lazy continuation

The end."""

# A reference defined after its use: the blocks shown before it render again, once, at the end.
REFERENCES = """See [the docs][d] first.

Then more text.

[d]: https://example.org/docs
"""


@pytest.mark.parametrize("size", [1, 7, 40])
def test_streaming_keeps_finished_blocks_and_matches_one_render(chat_page, size):
    page = chat_page
    for source in (RICH, TRICKY):
        result = page.evaluate(STREAM, {"source": source, "size": size})
        assert result["kept"] >= 8, result  # blocks became final while the text streamed
        assert result["lost"] == 0, result  # and none of them was rendered again
        assert result["same"], result  # the streamed result is what one render gives
        deltas = -(-len(source) // size)
        assert result["added"] <= 3 * deltas + 40, result  # the open block(s), not everything
    result = page.evaluate(STREAM, {"source": REFERENCES, "size": size})
    assert result["same"], result
    assert page.locator("a[href='https://example.org/docs']").count() == 2  # live and once
    assert page.page_errors == [] and page.console_errors == []


def test_rich_answer_renders_in_light_dark_and_on_a_phone(fake_model, chat_page):
    page = chat_page
    fake_model.script(text(*pieces(RICH, 23)))
    page.set_viewport_size({"width": 1100, "height": 1500})
    body = ask(page, "summarise the quarter", 1)
    assert body.locator("h3.md-h2").inner_text() == "Quarterly summary"
    assert body.locator("h4.md-h3").inner_text() == "Next steps"
    assert [body.locator(t).inner_text() for t in ("strong", "em", "s")] == ["12 %", "flat", "two"]
    links = body.locator("a").evaluate_all(
        "as => as.map(a => [a.getAttribute('href'), a.rel, a.target, a.textContent])"
    )
    assert links == [
        ["https://example.org/q3", "noopener noreferrer", "_blank", "report"],
        ["https://example.com/notes", "noopener noreferrer", "_blank", "https://example.com/notes"],
        [
            "mailto:finance@example.org",
            "noopener noreferrer",
            "_blank",
            "mailto:finance@example.org",
        ],
    ]
    assert body.locator("ol > li").count() == 3
    assert body.locator("ol ul > li").all_inner_texts() == ["travel", "equipment"]
    assert body.locator("li.task").all_inner_texts() == ["☑ collect figures", "☐ write the memo"]
    aligns = body.locator("th").evaluate_all("ths => ths.map(th => th.dataset.align || '')")
    assert aligns == ["left", "right", "right", "center"]
    assert body.locator("td").first.inner_text() == "Revenue"
    assert body.locator(".code-block .lang").inner_text() == "python"
    copy = body.locator(".code-block button.copy")
    assert [copy.inner_text(), copy.get_attribute("type")] == ["Copy", "button"]
    assert copy.get_attribute("aria-label") == "Copy code"
    assert body.locator(".code-block code").get_attribute("data-lang") == "python"
    assert body.locator("blockquote").inner_text().startswith("Figures are provisional")
    image = body.locator("button.load-image")
    assert image.inner_text() == "Load image from example.com"
    assert image.get_attribute("data-alt") == "Revenue chart"
    assert body.locator("img").count() == 0 and body.locator("hr").count() == 1
    assert body.locator("[style]").count() == 0  # the CSP forbids inline styles: none are made
    screenshot(page, "markdown-rich-light")

    page.click("#toggle-theme")
    assert page.get_attribute("html", "data-theme") == "dark"
    screenshot(page, "markdown-rich-dark")

    phone(page)
    page.set_viewport_size({"width": 390, "height": 2400})
    page.wait_for_timeout(300)
    screenshot(page, "markdown-rich-phone-dark")
    page.click("#toggle-theme")
    screenshot(page, "markdown-rich-phone-light")
    widths = page.evaluate(
        "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert widths[0] <= widths[1]  # nothing makes the phone page scroll sideways
    assert page.page_errors == [] and page.console_errors == []
