"""Web tools: `web_fetch` (a page's readable text, behind the SSRF guard), `web_search` (through
a SearXNG instance an admin configures) and `open_url` (a link offered to the user)."""

from __future__ import annotations

import codecs
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from agents.registry import ToolContext, ToolError, tool
from agents.tools.offline_rules import url_args
from agents.tools.url_guard import SCHEMES, Target, UrlRefused, url_target

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"application/json", "application/xml"})  # read as text, as text/* is
REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "Mozilla/5.0 (compatible; agent-platform web_fetch)"
TITLE_CHARS = 300
SNIPPET_CHARS = 300
URL_CHARS = 2000


@dataclass(frozen=True)
class Page:
    """What a fetch downloaded: the final URL, its media type and charset, and its bytes."""

    url: str
    media_type: str
    charset: str | None
    body: bytes
    truncated: bool  # the page went on past WEB_FETCH_MAX_BYTES


def page_fetch(url: str) -> Page:
    """Download a page within WEB_FETCH_TIMEOUT_SECONDS and WEB_FETCH_MAX_BYTES, following
    redirects by hand so that each hop passes the SSRF guard and goes to its checked address."""
    deadline = time.monotonic() + settings.WEB_FETCH_TIMEOUT_SECONDS
    # No proxies from the environment: the connection must go to the address the guard checked.
    with httpx.Client(trust_env=False, follow_redirects=False) as client:
        for _hop in range(settings.WEB_FETCH_MAX_REDIRECTS + 1):
            target = _target(url)
            response = _open(client, target, deadline)
            try:
                location = response.headers.get("location")
                if response.status_code not in REDIRECTS or not location:
                    return _download(target, response, deadline)
            finally:
                response.close()
            url = str(target.url.join(location))
    raise ToolError(
        _("The page redirected more than %(count)s times; it was not fetched.")
        % {"count": settings.WEB_FETCH_MAX_REDIRECTS}
    )


def _target(url: str) -> Target:
    try:
        return url_target(url)
    except UrlRefused as exc:
        raise ToolError(str(exc)) from exc


def _open(client: httpx.Client, target: Target, deadline: float) -> httpx.Response:
    """Send the GET to the checked address, with the name as Host header and TLS name."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _timed_out()
    request = client.build_request(
        "GET",
        target.connect_url,
        headers={"Host": target.host_header, "User-Agent": USER_AGENT, "Accept": "text/html, */*"},
        timeout=httpx.Timeout(remaining),
        extensions={"sni_hostname": target.host},
    )
    try:
        return client.send(request, stream=True)
    except httpx.TimeoutException as exc:
        raise _timed_out() from exc
    except httpx.HTTPError as exc:
        raise _unreachable(target, exc) from exc


def _download(target: Target, response: httpx.Response, deadline: float) -> Page:
    """The body of a final answer, if it is a page or text, read up to WEB_FETCH_MAX_BYTES."""
    url = str(target.url)
    if not 200 <= response.status_code < 300:
        raise ToolError(
            _("%(url)s answered HTTP %(status)s.") % {"url": url, "status": response.status_code}
        )
    media_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if not (media_type in HTML_TYPES or media_type.startswith("text/") or media_type in TEXT_TYPES):
        raise ToolError(
            _("%(url)s is not a web page or text (its content type is %(type)s).")
            % {"url": url, "type": media_type or _("not given")}
        )
    body, truncated = _read(target, response, deadline)
    return Page(url, media_type, response.charset_encoding, body, truncated)


def _read(target: Target, response: httpx.Response, deadline: float) -> tuple[bytes, bool]:
    """The body, streamed and cut at WEB_FETCH_MAX_BYTES (decoded bytes: a compressed page
    counts at its real size); True when there was more."""
    limit, size, chunks = settings.WEB_FETCH_MAX_BYTES, 0, []
    try:
        for chunk in response.iter_bytes():
            # The read timeout bounds each wait; this bounds a server that trickles bytes.
            if time.monotonic() > deadline:
                raise _timed_out()
            if size + len(chunk) > limit:
                chunks.append(chunk[: limit - size])
                return b"".join(chunks), True
            chunks.append(chunk)
            size += len(chunk)
    except httpx.TimeoutException as exc:
        raise _timed_out() from exc
    except httpx.HTTPError as exc:
        raise _unreachable(target, exc) from exc
    return b"".join(chunks), False


def _timed_out() -> ToolError:
    return ToolError(
        _("The page did not load within %(seconds)s seconds.")
        % {"seconds": settings.WEB_FETCH_TIMEOUT_SECONDS}
    )


def _unreachable(target: Target, exc: Exception) -> ToolError:
    return ToolError(
        _("%(url)s could not be fetched: %(problem)s")
        % {"url": target.url, "problem": str(exc) or type(exc).__name__}
    )


def page_text(page: Page) -> tuple[str, str]:
    """The page's title and readable text: the main text of an HTML page (trafilatura, which
    leaves out menus and boilerplate), any other text as it is."""
    if page.media_type in HTML_TYPES:
        title, text = _html_text(page)
    else:
        title, text = "", _decoded(page.body, page.charset)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return (" ".join(title.split()) or _default_title(page.url))[:TITLE_CHARS], text


def _html_text(page: Page) -> tuple[str, str]:
    # Imported on first use: 0.14 s that a process which never reads a page does not pay.
    import trafilatura

    # Without a charset in the header, trafilatura reads the page's own <meta charset>.
    markup: str | bytes = _decoded(page.body, page.charset) if page.charset else page.body
    document = trafilatura.bare_extraction(
        markup, url=page.url, with_metadata=True, include_comments=False
    )
    text = getattr(document, "text", None) or ""
    if not text:  # too little for a main text (a short page): the whole text of the body
        text = trafilatura.baseline(markup)[1]
    return getattr(document, "title", None) or "", text


def _decoded(body: bytes, charset: str | None) -> str:
    try:
        codecs.lookup(charset or "utf-8")
    except LookupError:
        charset = "utf-8"  # an unknown charset name in the header: the common case
    return body.decode(charset or "utf-8", errors="replace")


def _default_title(url: str) -> str:
    """A page without a title is named by its host and path."""
    parsed = httpx.URL(url)
    return f"{parsed.host}{parsed.path}".rstrip("/")


def _page_read(arguments: dict[str, Any], result: Any) -> str:
    """ "Read the page “Title”"."""
    if not isinstance(result, dict):
        return ""
    return _("Read the page “%(title)s”") % {"title": result.get("title") or result.get("url")}


def _found(arguments: dict[str, Any], result: Any) -> str:
    """ "Searched the web for “query”: 5 results"."""
    count = len(result.get("results") or []) if isinstance(result, dict) else 0
    words = ngettext(
        "Searched the web for “%(query)s”: %(count)s result",
        "Searched the web for “%(query)s”: %(count)s results",
        count,
    )
    return words % {"query": arguments.get("query", ""), "count": count}


@tool(
    "web_fetch",
    "Read a web page (http or https): its title and main text. Cite it as you cite documents, "
    "with its ref number, e.g. [1].",
    {
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1, "maxLength": URL_CHARS},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    offline_rule=url_args,
    offline_priority=45,  # after the planner's and ask-a-person rules, before the loose ones
    outside=True,
    title=gettext_lazy("Read a web page"),
    summarize=_page_read,
)
def web_fetch(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Fetch a page and hand its readable text to the model, marked as untrusted web data."""
    page = page_fetch(args["url"].strip())
    title, text = page_text(page)
    limit = settings.WEB_FETCH_MAX_CHARS
    return {
        "source": {"kind": "web", "url": page.url},
        "title": title,
        "url": page.url,
        # Anyone may write a page: its text is data to read, never instructions to follow.
        "untrusted_page_text": text[:limit],
        "truncated": page.truncated or len(text) > limit,
    }


@tool(
    "web_search",
    "Search the web. Results have a title, URL and snippet; read a result with web_fetch "
    "before relying on it.",
    {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 400},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    outside=True,
    title=gettext_lazy("Search the web"),
    summarize=_found,
)
def web_search(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Ask the configured SearXNG instance; its results, at most WEB_SEARCH_MAX_RESULTS."""
    base = settings.WEB_SEARCH_URL.rstrip("/")
    if not base:
        raise ToolError(_("No web search provider is configured; an admin sets WEB_SEARCH_URL."))
    count = min(
        args.get("max_results") or settings.WEB_SEARCH_MAX_RESULTS, settings.WEB_SEARCH_MAX_RESULTS
    )
    found = _search(base, args["query"])
    results = [
        _result(item) for item in found if isinstance(item, dict) and _is_web(item.get("url"))
    ]
    return {"source": {"kind": "web_search"}, "query": args["query"], "results": results[:count]}


def _search(base: str, query: str) -> list[Any]:
    """SearXNG's results for the query (its JSON API: `format=json` enabled on the instance).
    The instance is chosen by staff, so the SSRF guard does not apply to it."""
    try:
        response = httpx.get(
            f"{base}/search",
            params={"q": query, "format": "json"},
            headers={"Accept": "application/json"},
            timeout=settings.WEB_SEARCH_TIMEOUT_SECONDS,
        )
    except httpx.TimeoutException as exc:
        raise ToolError(_("The search provider did not answer in time.")) from exc
    except httpx.HTTPError as exc:
        raise ToolError(_("The search provider could not be reached.")) from exc
    if response.status_code != 200:
        raise ToolError(
            _("The search provider answered HTTP %(status)s.") % {"status": response.status_code}
        )
    try:
        results = response.json().get("results")
    except (ValueError, AttributeError) as exc:
        raise ToolError(_("The search provider did not answer with JSON results.")) from exc
    if not isinstance(results, list):
        raise ToolError(_("The search provider did not answer with JSON results."))
    return results


def _result(item: dict[str, Any]) -> dict[str, str]:
    def flat(value: Any, limit: int) -> str:
        return " ".join(str(value or "").split())[:limit]

    return {
        "title": flat(item.get("title"), TITLE_CHARS),
        "url": str(item["url"]),
        "snippet": flat(item.get("content"), SNIPPET_CHARS),
    }


def _is_web(value: Any) -> bool:
    """Whether a value is an http(s) URL (a result with another link is left out)."""
    try:
        url = httpx.URL(value) if isinstance(value, str) and len(value) <= URL_CHARS else None
    except httpx.InvalidURL:
        return False
    return url is not None and url.scheme in SCHEMES and bool(url.host)


@tool(
    "open_url",
    "Offer the user a link to open (shown as a button they may click; nothing opens by itself).",
    {
        "type": "object",
        "properties": {
            "url": {"type": "string", "minLength": 1, "maxLength": URL_CHARS},
            "label": {"type": "string", "maxLength": 80, "description": "The button's words."},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
    title=gettext_lazy("Offer a link"),
)
def open_url(context: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Check the link (http or https, no credentials) and offer it with its label."""
    raw = args["url"].strip()
    try:
        # A space or control character inside is no URL (a header could hide behind a newline).
        url = None if re.search(r"[\s\x00-\x1f\x7f]", raw) else httpx.URL(raw)
    except httpx.InvalidURL:
        url = None
    if url is None:
        raise ToolError(_("%(url)s is not a valid URL.") % {"url": raw})
    if url.scheme not in SCHEMES or not url.host:
        raise ToolError(_("Only http and https links can be offered, not %(url)s.") % {"url": raw})
    if url.userinfo:
        raise ToolError(_("Links with a user name or password are not offered."))
    label = " ".join((args.get("label") or "").split()) or url.host
    return {"open_url": {"url": str(url), "label": label}}
