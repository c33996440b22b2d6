"""Probes of real processes: a web process is unready while Redis or Postgres does not answer
(and alive all along); a Celery worker serves its own `/readyz` and `/metrics`."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.databases import child_database_url
from tests.e2e.conftest import _free_port
from tests.tcp_proxy import TcpProxy
from tests.waiting import wait_until

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]


def get(url: str, **headers: str) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def checks(url: str) -> tuple[int, dict[str, bool]]:
    status, body = get(url + "/readyz")
    return status, json.loads(body)["checks"]


def test_the_web_process_is_unready_while_redis_or_postgres_is_gone(
    start_asgi_server,
    private_redis,
):
    parts = urlsplit(child_database_url())
    proxy = TcpProxy((parts.hostname or "127.0.0.1", parts.port or 5432))
    through_proxy = urlunsplit(parts._replace(netloc=f"{parts.username}@127.0.0.1:{proxy.port}"))
    server = start_asgi_server(DATABASE_URL=through_proxy, REDIS_URL=private_redis.url)
    assert checks(server.url) == (
        200,
        {"database": True, "migrations": True, "redis": True},
    )

    private_redis.kill()
    wait_until(
        lambda: checks(server.url) == (503, {"database": True, "migrations": True, "redis": False})
    )
    private_redis.start()
    wait_until(lambda: checks(server.url)[0] == 200)

    proxy.cut()
    wait_until(lambda: checks(server.url)[1]["database"] is False)
    assert checks(server.url)[0] == 503
    assert get(server.url + "/healthz") == (200, '{"status": "ok"}')  # alive all along


def test_a_worker_serves_its_probes_and_metrics(workers):
    port = _free_port()
    workers.start(
        "w1",
        pool="threads",
        concurrency=4,
        WORKER_HTTP_PORT=str(port),
        WORKER_HTTP_HOST="127.0.0.1",
        METRICS_TOKEN="worker-token",
    )
    base = f"http://127.0.0.1:{port}"
    wait_until(
        lambda: (
            checks(base)
            == (200, {"database": True, "migrations": True, "redis": True, "consuming": True})
        )
    )
    assert get(base + "/healthz")[0] == 200
    assert get(base + "/metrics")[0] == 401  # the token is set: even this machine presents it
    status, text = get(base + "/metrics", Authorization="Bearer worker-token")
    assert status == 200 and "agent_platform_model_call_seconds" in text
    assert get(base + "/admin/")[0] == 404
