"""A Celery worker's own small HTTP server (WORKER_HTTP_PORT): `/healthz`, `/readyz` (its
dependencies answer and it is consuming) and `/metrics` (its model calls, tokens and runs),
for Kubernetes' probes and Prometheus (docs/operations.md, *Health and metrics*)."""

from __future__ import annotations

import ipaddress
import json
import logging
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.db import connections
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from config.health import readiness_checks
from config.metrics import metrics_text, token_presented

logger = logging.getLogger(__name__)


class WorkerState:
    """Whether this worker consumes tasks now: set when Celery says it is ready, cleared when
    it starts shutting down (config.celery_app)."""

    consuming = threading.Event()


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # a probe every few seconds
        return


StartResponse = Callable[[str, list[tuple[str, str]]], Any]


def worker_app(environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
    """The WSGI application: the three paths, anything else 404."""
    path = environ.get("PATH_INFO", "")
    try:
        if path == "/healthz":
            return _json(start_response, 200, {"status": "ok"})
        if path == "/readyz":
            checks = {**readiness_checks(), "consuming": WorkerState.consuming.is_set()}
            ready = all(checks.values())
            body = {"status": "ok" if ready else "unavailable", "checks": checks}
            return _json(start_response, 200 if ready else 503, body)
        if path == "/metrics":
            if not _may_scrape(environ):
                start_response("401 Unauthorized", [("WWW-Authenticate", 'Bearer realm="metrics"')])
                return [b"Present METRICS_TOKEN."]
            start_response("200 OK", [("Content-Type", CONTENT_TYPE_LATEST)])
            return [metrics_text()]
        return _json(start_response, 404, {"status": "not_found"})
    finally:
        connections.close_all()  # this request's thread ends here: its connections go back


def _may_scrape(environ: dict[str, Any]) -> bool:
    """METRICS_TOKEN as a bearer token, or, with no token set, a caller on this machine."""
    if token_presented(environ.get("HTTP_AUTHORIZATION", "")):
        return True
    if settings.METRICS_TOKEN:
        return False
    try:
        return ipaddress.ip_address(environ.get("REMOTE_ADDR", "")).is_loopback
    except ValueError:
        return False


def _json(start_response: StartResponse, status: int, body: dict[str, Any]) -> list[bytes]:
    reason = {200: "OK", 404: "Not Found", 503: "Service Unavailable"}[status]
    start_response(f"{status} {reason}", [("Content-Type", "application/json")])
    return [json.dumps(body).encode()]


def worker_http_serve(host: str, port: int) -> _Server:
    """Serve the worker's paths on host:port from a daemon thread; the server."""
    server = make_server(host, port, worker_app, server_class=_Server, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="worker-http", daemon=True).start()
    logger.info("worker health and metrics on http://%s:%d/", host, server.server_port)
    return server
