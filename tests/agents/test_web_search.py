"""web_search through a SearXNG instance (a local fake speaking its JSON API), and the clear
refusal when no provider is configured."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

import pytest

from agents.registry import ToolContext, ToolResult, execute, get_tool
from tests.agents.test_web_fetch import LocalServer, Route, answer, local_server


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Route]], LocalServer]]:
    """Start local servers for a test; all stop at its end."""
    with ExitStack() as stack:
        yield lambda routes: stack.enter_context(local_server(routes))


def searxng(results: list[dict]) -> tuple[Route, list[dict]]:
    """A fake SearXNG `/search` answering these results in JSON; the queries it was asked."""
    asked: list[dict] = []

    def route(handler: BaseHTTPRequestHandler) -> None:
        query = parse_qs(urlsplit(handler.path).query)
        asked.append(query)
        if query.get("format") != ["json"]:
            answer("format not allowed", "text/html", status=403)(handler)
            return
        body = {"query": query["q"][0], "number_of_results": len(results), "results": results}
        answer(json.dumps(body), "application/json")(handler)

    return route, asked


def hit(n: int, **fields: str) -> dict:
    return {
        "title": f"Result {n}",
        "url": f"https://example.com/{n}",
        "content": f"Snippet number {n}.",
        "engine": "fake",
        **fields,
    }


def search(arguments: dict) -> ToolResult:
    result = execute(get_tool("web_search"), ToolContext(user=None), json.dumps(arguments))
    json.loads(result.as_content())
    return result


def test_results_come_from_the_configured_searxng(serve, settings):
    route, asked = searxng([hit(1), hit(2, content="  Spread\n over   lines  "), hit(3)])
    server = serve({"/search": route})
    settings.WEB_SEARCH_URL = server.url("/")  # a trailing slash is fine

    result = search({"query": "cats sleep 貓"})

    assert result.ok, result.error
    assert asked == [{"q": ["cats sleep 貓"], "format": ["json"]}]
    assert result.data["source"] == {"kind": "web_search"}
    assert result.data["query"] == "cats sleep 貓"
    assert result.data["results"] == [
        {"title": "Result 1", "url": "https://example.com/1", "snippet": "Snippet number 1."},
        {"title": "Result 2", "url": "https://example.com/2", "snippet": "Spread over lines"},
        {"title": "Result 3", "url": "https://example.com/3", "snippet": "Snippet number 3."},
    ]


def test_the_number_of_results_is_capped(serve, settings):
    route, _asked = searxng([hit(n) for n in range(1, 11)])
    server = serve({"/search": route})
    settings.WEB_SEARCH_URL = server.url("")
    settings.WEB_SEARCH_MAX_RESULTS = 4

    default = search({"query": "cats"})
    fewer = search({"query": "cats", "max_results": 2})
    more = search({"query": "cats", "max_results": 9})  # never past the admin's cap

    assert [r["url"] for r in default.data["results"]] == [
        f"https://example.com/{n}" for n in range(1, 5)
    ]
    assert len(fewer.data["results"]) == 2
    assert len(more.data["results"]) == 4


def test_results_that_are_not_web_links_are_left_out_and_long_snippets_cut(serve, settings):
    route, _asked = searxng(
        [
            hit(1, url="javascript:alert(1)"),
            hit(2, url="file:///etc/passwd"),
            {"title": "No link"},
            hit(3, content="word " * 200),
        ]
    )
    server = serve({"/search": route})
    settings.WEB_SEARCH_URL = server.url("")

    (only,) = search({"query": "cats"}).data["results"]

    assert only["url"] == "https://example.com/3"
    assert len(only["snippet"]) == 300


def test_without_a_provider_the_tool_says_so(settings):
    settings.WEB_SEARCH_URL = ""

    result = search({"query": "cats"})

    assert not result.ok and result.error_code == "tool_error"
    assert result.error == "No web search provider is configured; an admin sets WEB_SEARCH_URL."


def test_a_provider_that_fails_or_does_not_speak_json_gives_a_clear_error(serve, settings):
    server = serve(
        {
            "/broken/search": answer("oops", "text/plain", status=500),
            "/html/search": answer("<html>results</html>"),
        }
    )

    settings.WEB_SEARCH_URL = server.url("/broken")
    broken = search({"query": "cats"})
    settings.WEB_SEARCH_URL = server.url("/html")
    html = search({"query": "cats"})

    assert not broken.ok and broken.error == "The search provider answered HTTP 500."
    assert not html.ok and html.error == "The search provider did not answer with JSON results."


def test_an_unreachable_provider_gives_a_clear_error(serve, settings):
    server = serve({})
    settings.WEB_SEARCH_URL = server.url("")
    server.httpd.server_close()  # nothing listens there any more

    result = search({"query": "cats"})

    assert not result.ok and result.error == "The search provider could not be reached."
