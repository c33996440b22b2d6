"""Health for load balancers and Kubernetes: `/healthz` (the process answers) and `/readyz`
(what this configuration uses is reachable). Cheap, unauthenticated, and saying nothing but
which check failed (docs/operations.md, *Health and metrics*)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from inspect import iscoroutinefunction
from typing import Any

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers
from django.utils.decorators import sync_and_async_middleware
from kombu import Connection
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from config.metrics import metrics_text, token_presented

logger = logging.getLogger(__name__)

CHECK_TIMEOUT_SECONDS = 2.0  # a probe answers within the load balancer's own timeout


@sync_and_async_middleware
def probes_middleware(get_response: Any) -> Any:
    """The first middleware: `/healthz`, `/readyz`, and `/metrics` with METRICS_TOKEN are
    answered before any other, so a probe or a scraper that reaches a pod by its address is
    neither refused for its Host header (ALLOWED_HOSTS) nor redirected to HTTPS. (`/metrics`
    for a signed-in staff member goes through the whole stack: config.metrics.metrics_view.)"""
    if iscoroutinefunction(get_response):

        async def middleware_async(request: HttpRequest) -> HttpResponse:
            answer = _probe(request)
            if answer is not None:
                return await sync_to_async(answer)()
            return await get_response(request)

        return middleware_async

    def middleware(request: HttpRequest) -> HttpResponse:
        answer = _probe(request)
        return answer() if answer is not None else get_response(request)

    return middleware


def _probe(request: HttpRequest) -> Callable[[], HttpResponse] | None:
    """What answers this request here, if it is a probe's or a token-bearing scrape."""
    if request.method not in ("GET", "HEAD"):
        return None
    if request.path == "/healthz":
        return healthz
    if request.path == "/readyz":
        return readyz
    if request.path == "/metrics" and token_presented(request.headers.get("Authorization", "")):
        return lambda: HttpResponse(metrics_text(), content_type=CONTENT_TYPE_LATEST)
    return None


def healthz() -> JsonResponse:
    """The process is alive and serving requests: nothing else is asked."""
    return _uncached(JsonResponse({"status": "ok"}))


def readyz() -> JsonResponse:
    """Ready for traffic when every dependency of this configuration answers; 503 naming the
    checks that failed otherwise (never why: a probe is public)."""
    checks = readiness_checks()
    failed = [name for name, ok in checks.items() if not ok]
    response = JsonResponse(
        {"status": "unavailable" if failed else "ok", "checks": checks},
        status=503 if failed else 200,
    )
    return _uncached(response)


def _uncached(response: JsonResponse) -> JsonResponse:
    add_never_cache_headers(response)
    return response


def readiness_checks() -> dict[str, bool]:
    """Each dependency this process uses, by name, and whether it answers now: the database
    (with every migration applied), Redis and the broker where configured."""
    checks: dict[str, Callable[[], None]] = {"database": _database, "migrations": _migrations}
    if settings.REDIS_URL:
        checks["redis"] = lambda: _redis(settings.REDIS_URL)
    broker = settings.CELERY_BROKER_URL
    if broker and not settings.TASKS_RUN_SYNC and broker != settings.REDIS_URL:
        checks["broker"] = lambda: _broker(broker)
    # All at once, each on a thread of its own, and none waited for past the probe's time: a
    # database that went away holds a connection request for the pool's whole timeout.
    executor = ThreadPoolExecutor(max_workers=len(checks), thread_name_prefix="readyz")
    try:
        futures = {name: executor.submit(_passes, name, check) for name, check in checks.items()}
        done, _ = wait(futures.values(), timeout=CHECK_TIMEOUT_SECONDS)
    finally:
        executor.shutdown(wait=False)
    results = {}
    for name, future in futures.items():
        results[name] = future in done and future.result()
        if future not in done:
            logger.warning(
                "readiness check %s failed: no answer in %s s", name, CHECK_TIMEOUT_SECONDS
            )
    return results


def _passes(name: str, check: Callable[[], None]) -> bool:
    try:
        check()
    except Exception as exc:  # any failure is "not ready"; the log says why
        logger.warning("readiness check %s failed: %s", name, exc)
        return False
    finally:
        connections.close_all()  # this thread's own (returned to the pool, if there is one)
    return True


def _database() -> None:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")


_migrated = False  # once every migration is applied, it stays so for this process


def _migrations() -> None:
    """Every migration this code knows is applied (a pod of a new release waits for its
    migrations job). Reading the migration graph takes a moment: asked until it passes once."""
    global _migrated
    if _migrated:
        return
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise RuntimeError("unapplied migrations")
    _migrated = True


def _broker(url: str) -> None:
    with Connection(url, connect_timeout=CHECK_TIMEOUT_SECONDS) as broker:
        broker.ensure_connection(max_retries=1, timeout=CHECK_TIMEOUT_SECONDS)


def _redis(url: str) -> None:
    client = redis.Redis.from_url(
        url, socket_connect_timeout=CHECK_TIMEOUT_SECONDS, socket_timeout=CHECK_TIMEOUT_SECONDS
    )
    try:
        client.ping()
    finally:
        client.close()
