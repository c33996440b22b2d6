"""open_url: a link offered to the user (the page shows it as a button they may click), only for
http(s) URLs without credentials."""

from __future__ import annotations

import json

import pytest

from agents.registry import ToolContext, ToolResult, execute, get_tool


def offer(arguments: dict) -> ToolResult:
    result = execute(get_tool("open_url"), ToolContext(user=None), json.dumps(arguments))
    json.loads(result.as_content())
    return result


def test_a_web_link_is_offered_with_its_label():
    result = offer({"url": "https://example.com/report?q=1#totals", "label": "  Open the\nreport "})

    assert result.ok, result.error
    assert result.data == {
        "open_url": {"url": "https://example.com/report?q=1#totals", "label": "Open the report"}
    }


def test_without_a_label_the_host_names_the_link():
    result = offer({"url": "http://intranet.example:8080/wiki"})

    assert result.data["open_url"] == {
        "url": "http://intranet.example:8080/wiki",
        "label": "intranet.example",
    }


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)",
        "JavaScript:alert(1)",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "file:///etc/passwd",
        "ftp://example.com/file",
        "mailto:someone@example.com",
        "/relative/path",
        "https://",
    ],
)
def test_anything_but_an_http_link_is_refused(url):
    result = offer({"url": url})

    assert not result.ok and result.error_code == "tool_error"
    assert "Only http and https links" in result.error


@pytest.mark.parametrize(
    "url",
    ["https://example.com/a b", "https://example.com/\nSet-Cookie: x", "https://exa\x00mple.com/"],
)
def test_a_url_with_spaces_or_control_characters_is_refused(url):
    result = offer({"url": url})

    assert not result.ok and result.error == f"{url} is not a valid URL."


def test_a_link_with_credentials_is_refused():
    result = offer({"url": "https://admin:hunter2@example.com/"})

    assert not result.ok and "user name or password" in result.error


def test_the_label_and_url_are_bounded():
    long_label = offer({"url": "https://example.com/", "label": "x" * 81})
    long_url = offer({"url": "https://example.com/" + "a" * 2000})

    assert not long_label.ok and long_label.error_code == "invalid_arguments"
    assert not long_url.ok and long_url.error_code == "invalid_arguments"
    assert offer({"url": "https://example.com/", "label": "x" * 80}).ok
