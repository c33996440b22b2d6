"""Markdown rendering cost in Debian's Chromium: pathological inputs and a streamed answer.

Drives the page's own `Transcript` (static/chat/render.js) in headless Chromium through
Playwright. The static files are served to the browser from disk by request interception, so
no server runs; `--static DIR` measures another copy of static/ (e.g. an older commit's, from
`git archive <rev> static | tar -x -C /tmp/old`). Prints, per case, the main-thread time of the
render including layout, or the error it threw.

    .venv/bin/python bench/markdown_render.py [--static DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ORIGIN = "http://bench.test"

PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="/static/chat/chat.css"></head>
<body><main class="chat"><div id="transcript" class="transcript"></div></main>
<script type="module" src="/bench.js"></script></body></html>"""

# Runs in the page: one fresh Transcript per case, events shaped as docs/protocol.md says.
DRIVER = """
import { Transcript } from "/static/chat/render.js";

const agent = { kind: "entry", name: "assistant", display_name: "Assistant", depth: 0,
                path: ["assistant"] };
let counter = 0;

function fresh() {
  const root = document.getElementById("transcript");
  root.replaceChildren();
  const transcript = new Transcript(root, { announce() {}, changed() {} });
  counter += 1;
  const base = { session_id: "s", run_id: `r${counter}`, message_id: `m${counter}`, agent };
  return { root, transcript, base };
}

function timed(work, root) {
  const started = performance.now();
  try {
    work();
    void root.offsetHeight; // the layout the browser does before the next frame (if not yet)
    return { ms: performance.now() - started };
  } catch (error) {
    return { ms: performance.now() - started, error: `${error.name}: ${error.message}` };
  }
}

/** One render of a whole answer (message.completed on a message never seen before). */
window.renderOnce = (text) => {
  const { root, transcript, base } = fresh();
  return timed(() => transcript.completed(
    { ...base, type: "message.completed", data: { text, status: "completed" } }), root);
};

/** The answer in `pieces`, one message.delta each (a layout after each), then completed. */
window.renderStreamed = (pieces) => {
  const { root, transcript, base } = fresh();
  let total = 0;
  let worst = 0;
  let error = null;
  const first = timed(() => transcript.started(
    { ...base, type: "message.started", data: { model: "bench" } }), root);
  total += first.ms;
  let offset = 0;
  for (const text of pieces) {
    const step = timed(() => transcript.delta(
      { ...base, type: "message.delta", data: { text, offset } }), root);
    offset += text.length;
    total += step.ms;
    worst = Math.max(worst, step.ms);
    error = error || step.error || null;
  }
  const whole = pieces.join("");
  const last = timed(() => transcript.completed(
    { ...base, type: "message.completed", data: { text: whole, status: "completed" } }), root);
  return { ms: total + last.ms, worst, completed: last.ms, error: error || last.error || null,
           chars: root.textContent.length };
};
window.benchReady = true;
"""

SECTION = """## Step {n}: what to check

The report for **quarter {n}** shows revenue up by *{n} %*, with `costs` flat. See
[the ledger](https://example.org/ledger/{n}) and https://example.com/q{n} for details.

- first point about item {n}, with **bold** and _emphasis_
- second point
  - nested detail {n}
- third point with `inline code`

| metric | value | change |
|---|---:|:---:|
| revenue | {n}00 | +{n} % |
| costs | 250 | 0 % |

```python
def total(rows):
    return sum(row.value for row in rows)  # step {n}
```

> Note: numbers for quarter {n} are provisional.

"""


def rich_answer(size: int = 16_000) -> str:
    """A realistic answer of about `size` characters: headings, lists, tables, code, links."""
    parts, n = [], 1
    while sum(map(len, parts)) < size:
        parts.append(SECTION.format(n=n))
        n += 1
    return "".join(parts)[:size]


def cases() -> dict[str, str]:
    """The inputs that were slow or crashed with the hand-written renderer."""
    return {
        "32k '['": "[" * 32_000,
        "'_x ' x10k": "_x " * 10_000,
        "8k nested '>'": ">" * 8_000 + " deep",
        "16k rich answer (one render)": rich_answer(),
    }


def streamed() -> dict[str, str]:
    """Answers streamed in 400 deltas: a typical one, and one long open block (the worst case
    for incremental rendering, which renders the open block again on every delta)."""
    code = "".join(f"    value_{n} = compute({n}, scale=2)  # step {n}\n" for n in range(400))
    return {
        "16k rich answer": rich_answer(),
        "16k code block": ("```python\ndef run():\n" + code)[:16_000],
    }


def serve(root: Path, route) -> None:
    """Answer a request of the page from disk (or the generated page and driver)."""
    path = route.request.url.removeprefix(ORIGIN).split("?")[0]
    if path == "/bench.html":
        route.fulfill(body=PAGE, content_type="text/html")
    elif path == "/bench.js":
        route.fulfill(body=DRIVER, content_type="text/javascript")
    elif path.startswith("/static/") and (root / path.removeprefix("/static/")).is_file():
        file = root / path.removeprefix("/static/")
        kind = "text/css" if file.suffix == ".css" else "text/javascript"
        if file.suffix in {".svg"}:
            kind = "image/svg+xml"
        route.fulfill(body=file.read_bytes(), content_type=kind)
    else:
        route.fulfill(status=404, body="not found")


def run(static: Path, repeat: int) -> None:
    """Open the bench page and print every figure."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
        )
        page = browser.new_page(viewport={"width": 1100, "height": 760})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.route(f"{ORIGIN}/**", lambda route: serve(static, route))
        page.goto(f"{ORIGIN}/bench.html")
        page.wait_for_function("window.benchReady === true")
        print(f"static: {static}")
        for name, text in cases().items():
            results = [page.evaluate("t => window.renderOnce(t)", text) for _ in range(repeat)]
            ms = statistics.median(r["ms"] for r in results)
            note = f"  ({results[0]['error']})" if results[0].get("error") else ""
            print(f"{name:<32} {ms:9.1f} ms{note}")
        for name, answer in streamed().items():
            step = len(answer) // 400
            pieces = [answer[i : i + step] for i in range(0, len(answer), step)]
            runs = [page.evaluate("p => window.renderStreamed(p)", pieces) for _ in range(repeat)]
            total = statistics.median(r["ms"] for r in runs)
            worst = statistics.median(r["worst"] for r in runs)
            final = statistics.median(r["completed"] for r in runs)
            print(
                f"{name + f', {len(pieces)} deltas':<32} {total:9.1f} ms main thread"
                f" (worst delta {worst:.1f} ms, message.completed {final:.1f} ms)"
            )
        if errors:
            print("page errors:", json.dumps(errors[:3]))
        browser.close()


def main() -> None:
    """Parse the arguments and run the bench."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--static", type=Path, default=ROOT / "static")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    run(args.static.resolve(), args.repeat)


if __name__ == "__main__":
    main()
