"""Content-Security-Policy on every response: scripts and styles only from our own files."""

from __future__ import annotations

from contextlib import suppress
from functools import cache

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase
from django.urls import NoReverseMatch, reverse
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def content_security_policy(request: HttpRequest) -> str:
    """The policy for one request.

    - `script-src 'self'`: no inline script, no eval, no third-party script (the Markdown
      libraries are vendored under static/vendor/). Model text is parsed with raw HTML off and
      sanitized before it reaches the DOM, so this is the second wall, not the first.
    - `style-src 'self'`: no <style> blocks or style="" attributes (script may still set
      element.style, which CSP does not govern). Django admin's templates and the API docs
      (Swagger UI) use inline styles and data: icons, so those pages alone allow them; never
      inline script.
    - `img-src 'self' http: https:`: the page never creates an <img> for a model-supplied URL
      by itself; it shows a "Load image from <host>" button and only a click creates the image.
      Allowing any http(s) image is what makes that click work; images cannot run script.
    - `connect-src 'self' ws(s)://<this host>`: the chat websocket and the REST API only, so
      injected code (if any ever ran) could not send data elsewhere.
    - `frame-ancestors 'none'`, `base-uri 'none'`, `object-src 'none'`, `form-action 'self'`.
    """
    try:
        host = request.get_host()
        sockets = f" ws://{host} wss://{host}"
    except DisallowedHost:
        sockets = ""
    relaxed = any(request.path.startswith(prefix) for prefix in _relaxed_prefixes())
    style = "'self' 'unsafe-inline'" if relaxed else "'self'"
    images = "'self' data: http: https:" if relaxed else "'self' http: https:"
    return "; ".join(
        [
            "default-src 'self'",
            "script-src 'self'",
            f"style-src {style}",
            f"img-src {images}",
            f"connect-src 'self'{sockets}",
            "font-src 'self'",
            "object-src 'none'",
            "base-uri 'none'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        ]
    )


@cache
def _relaxed_prefixes() -> tuple[str, ...]:
    """Pages that need inline styles: the admin and the API docs, when they are installed."""
    prefixes = []
    for name in ("admin:index", "api-docs"):
        with suppress(NoReverseMatch):
            prefixes.append(reverse(name))
    return tuple(prefixes)


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Adds the policy unless the view set its own (a page that needs more says so itself)."""

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        """Set the header on responses that do not have one."""
        if HEADER not in response:
            response[HEADER] = content_security_policy(request)
        return response
