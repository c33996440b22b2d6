"""The delegation tree in a real browser: an expert's panel appears at once, streams, nests,
survives a reload unchanged, can be hidden, and a stopped turn stops the whole tree."""

from __future__ import annotations

import pytest

from agents.demo import seed_demo_agents
from tests.e2e.conftest import phone, screenshot, sign_in_as
from tests.factories import make_user
from tests.fake_openai import FakeOpenAI, Team, error, text, tool_calls

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "budget check: what is 1200*0.05?"  # offline routing: assistant → finance → math

# Every transcript entry as a line: its kind, which panel holds it, who, status and text.
# Durations are left out (a replay measures them from saved timestamps).
TREE = """() => [...document.querySelectorAll('#transcript .msg')].map((m) => {
  const holder = m.parentElement.closest('.msg.delegation');
  const where = holder ? holder.querySelector('.who').textContent : 'main';
  if (m.classList.contains('delegation')) {
    return `panel depth=${m.dataset.depth} in=${where} ${m.querySelector('.who').textContent} `
      + `${m.dataset.status} ${m.querySelector(':scope > .outcome').textContent}`;
  }
  if (m.classList.contains('tool')) {
    return `tool in=${where} ${m.querySelector('summary').textContent}`;
  }
  if (!m.querySelector('header')) return `${m.className} in=${where} ${m.textContent}`;
  return `${m.className} in=${where} ${m.querySelector('header').textContent}: `
    + m.querySelector('.body').textContent;
})"""

# Records what each expert panel looked like after every change of the transcript.
WATCH_PANELS = """() => {
  window.panelStates = [];
  new MutationObserver(() => {
    for (const p of document.querySelectorAll('.msg.delegation')) {
      const own = p.querySelector(':scope > details > .thread > .msg.agent .body');
      window.panelStates.push({
        who: p.querySelector('.who').textContent,
        depth: p.dataset.depth,
        status: p.dataset.status,
        state: p.querySelector('.state').textContent,
        duration: p.querySelector('.duration').textContent,
        text: own ? own.textContent.length : 0,
        parent: p.parentElement.closest('.msg.delegation')?.querySelector('.who').textContent
          || null,
      });
    }
  }).observe(document.getElementById('transcript'),
             {childList: true, subtree: true, characterData: true});
}"""


@pytest.fixture
def demo_team(db):
    """alice and the demo agents (written before the browser starts, see test_browser_chat)."""
    make_user("alice")
    seed_demo_agents()


def left(page, selector: str) -> float:
    return page.locator(selector).first.bounding_box()["x"]


def test_expert_panels_stream_live_nest_by_depth_and_replay_the_same(
    demo_team, start_asgi_server, browser_page
):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="50")
    page = browser_page
    sign_in_as(page, server.url)
    page.evaluate(WATCH_PANELS)
    page.fill("#text", QUESTION)
    page.keyboard.press("Enter")

    finance = ".msg.delegation[data-depth='1']"
    math = f"{finance} .msg.delegation[data-depth='2']"
    page.wait_for_selector(f"{finance}[data-status=running]")
    assert page.inner_text(f"{finance} .state") == "Asking Finance expert…"
    # Seen by the panel watcher, which misses no change (a poll could miss a short stream).
    page.wait_for_selector(math, state="attached")
    screenshot(page, "delegation-streaming")
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]")

    states = page.evaluate("window.panelStates")
    fin = [s for s in states if s["who"] == "Finance expert"]
    # The indicator came first, before the expert had written anything.
    assert fin[0]["state"] == "Asking Finance expert…" and fin[0]["text"] == 0
    # The expert's own answer streamed inside its panel while it was still running.
    streamed = {s["text"] for s in fin if s["status"] == "running" and s["text"]}
    assert len(streamed) >= 2, f"the expert's text did not stream in its panel: {streamed}"
    # The elapsed time ticked while it ran.
    assert len({s["duration"] for s in fin if s["status"] == "running"}) >= 2
    # The Math expert, asked by Finance, sat in Finance's panel, one level deeper.
    maths = [s for s in states if s["who"] == "Math expert"]
    assert maths and all(s["parent"] == "Finance expert" and s["depth"] == "2" for s in maths)
    assert any(s["status"] == "running" and s["text"] for s in maths), "Math did not stream"
    assert fin[-1]["status"] == maths[-1]["status"] == "succeeded"
    assert fin[-1]["state"] == "Finance expert answered" and fin[-1]["duration"].endswith("s")

    answer = page.inner_text("#transcript > .msg.agent .body")
    assert "Finance expert says:" in answer and "60" in answer
    assert page.inner_text("#announcer").startswith("Assistant: ")

    # Finished panels fold away; opened, they show the tree indented by depth.
    assert not page.locator(f"{finance} > details").evaluate("d => d.open")
    page.click(f"{finance} > details > summary")
    page.click(f"{math} > details > summary")
    finance_own = f"{finance} > details > .thread > .msg.agent"
    math_own = f"{math} > details > .thread > .msg.tool"
    assert left(page, finance) > left(page, "#transcript > .msg.agent") - 1
    assert left(page, finance_own) > left(page, "#transcript > .msg.agent")
    assert left(page, math) > left(page, finance)
    assert left(page, math_own) > left(page, finance_own)
    assert "Calculated" in page.inner_text(f"{math} .msg.tool summary")  # a sentence
    screenshot(page, "delegation-tree-expanded-light")
    live = page.evaluate(TREE)
    assert [line.split(" ")[0] for line in live] == [
        "msg",  # the user's question
        "panel",  # assistant → Finance expert
        "panel",  # Finance → Math expert
        "tool",  # Math's calculate call
        "msg",  # Math's answer
        "msg",  # Finance's answer
        "msg",  # the assistant's answer, back in the main thread
    ]

    page.reload()
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]")
    assert page.evaluate(TREE) == live
    assert page.locator(".msg.delegation[data-status=running]").count() == 0

    # The header switch hides what the experts did (remembered across reloads).
    page.click("#toggle-experts")
    assert page.get_attribute("#toggle-experts", "aria-pressed") == "false"
    page.click(f"{finance} > details > summary")
    assert not page.is_visible(f"{finance} .thread")
    assert "Finance expert" in page.inner_text(f"{finance} .state")  # who was asked stays
    page.reload()
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]")
    assert page.get_attribute("#toggle-experts", "aria-pressed") == "false"
    page.click("#toggle-experts")
    page.click(f"{finance} > details > summary")
    page.click(f"{math} > details > summary")
    assert page.is_visible(f"{math} .msg.tool")

    page.emulate_media(color_scheme="dark")
    screenshot(page, "delegation-tree-expanded-dark")
    phone(page)
    screenshot(page, "delegation-tree-phone-dark")
    page.emulate_media(color_scheme="light")
    screenshot(page, "delegation-tree-phone-light")
    assert page.console_errors == []


def test_stop_cancels_the_whole_tree(demo_team, start_asgi_server, browser_page):
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="100")
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", QUESTION)
    page.keyboard.press("Enter")
    page.wait_for_selector(".msg.delegation[data-depth='2']")  # Finance waits on Math now
    assert page.is_visible("#stop") and not page.is_visible("#send")
    page.click("#stop")
    page.wait_for_selector("#send", state="visible")
    assert not page.is_visible("#stop")
    finance = ".msg.delegation[data-depth='1']"
    page.wait_for_selector(f"{finance}[data-status=cancelled]")
    assert page.inner_text(f"{finance} .state") == "Finance expert was stopped"
    stopped_after = page.inner_text(f"{finance} .duration")
    assert stopped_after.endswith("s"), stopped_after  # how long it ran before the stop
    assert page.inner_text("#transcript > .msg.turn-stopped") == "Stopped."  # said at the top too
    # Math may have answered just before the stop; nothing is left running either way.
    assert page.get_attribute(".msg.delegation[data-depth='2']", "data-status") in (
        "cancelled",
        "succeeded",
    )
    page.wait_for_timeout(500)  # a late event from the stopped workers changes nothing
    assert page.locator(".msg[data-status=streaming], .msg[data-status=running]").count() == 0
    # The user's own stop is not an error: no failure note, no error chip, no toast.
    assert page.locator(".msg[data-status=failed], .msg.tool[data-status=error]").count() == 0
    assert page.locator("#toasts > *").count() == 0
    assert page.locator("#transcript > .msg.agent").count() == 0  # the assistant never answered
    live = page.evaluate(TREE)
    page.reload()
    page.wait_for_selector(".msg.delegation[data-status=cancelled]")
    assert page.evaluate(TREE) == live
    assert page.inner_text("#transcript > .msg.turn-stopped") == "Stopped."  # kept, as saved
    assert page.inner_text(f"{finance} .duration").endswith("s")  # from the saved times
    assert not page.is_visible("#stop")
    assert page.console_errors == []


@pytest.fixture
def scripted_team(db):
    """alice and a boss that asks two experts at once: one that does not exist (refused) and
    one whose model fails (failed); on the fake OpenAI server."""
    from tests.delegation.conftest import make_team

    make_user("alice")
    make_team(boss=["flaky"], flaky=[])
    fake = FakeOpenAI().start()
    team = Team(fake)
    team.script(
        "boss",
        tool_calls(
            ("delegate", {"target": "ghost", "task": "haunt"}),
            ("delegate", {"target": "flaky", "task": "count the beans"}),
        ),
        text("Neither expert could help, sorry."),
    )
    team.script("flaky", error(400, "the beans are gone"))
    yield fake
    fake.stop()


def test_refused_and_failed_experts_say_why(scripted_team, start_asgi_server, browser_page):
    server = start_asgi_server(
        OPENAI_BASE_URL=scripted_team.base_url, OPENAI_API_KEY="test-key", OPENAI_MAX_RETRIES="0"
    )
    page = browser_page
    sign_in_as(page, server.url)
    page.fill("#text", "help me")
    page.keyboard.press("Enter")
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]")
    ghost = page.locator(".msg.delegation[data-status=refused]")
    assert ghost.locator(".who").inner_text() == "ghost"
    assert ghost.locator(".state").inner_text() == "Could not ask ghost"
    assert "ghost" in ghost.locator(".outcome").inner_text()  # the guard's plain sentence
    flaky = page.locator(".msg.delegation[data-status=failed]")
    assert flaky.locator(".who").inner_text() == "Flaky"
    assert flaky.locator(".state").inner_text() == "Flaky could not answer"
    assert flaky.locator(".outcome").inner_text().startswith("I asked the Flaky but it could not")
    page.click("#toggle-experts")  # hidden detail still leaves who was asked and why it failed
    assert page.is_visible(".msg.delegation[data-status=failed] .outcome")
    screenshot(page, "delegation-refused-and-failed")
    live = page.evaluate(TREE)
    page.reload()
    page.wait_for_selector("#transcript > .msg.agent[data-status=completed]")
    assert page.evaluate(TREE) == live
    page.click("#toggle-experts")
    assert page.console_errors == []
