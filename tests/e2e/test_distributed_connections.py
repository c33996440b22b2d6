"""A web process under a burst of requests holds at most its pool's connections to Postgres
(each request's database work runs on a thread of its own: connections kept per thread were
one per request in flight, idle for a minute after)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from django.db import connection

from chat.tokens import token_create
from tests.factories import make_agent, make_user

pytestmark = [pytest.mark.distributed, pytest.mark.django_db(transaction=True)]

POOL = 3


SERVER = "pool-burst-server"  # its sessions' application_name (libpq reads PGAPPNAME)


def server_connections() -> int:
    """The web server's sessions on the test database."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND application_name = %s",
            [SERVER],
        )
        return cursor.fetchone()[0]


def test_a_burst_of_requests_holds_at_most_the_pools_connections(start_asgi_server):
    make_agent("assistant", is_entry=True)
    token = token_create(user=make_user("alice"), name="burst")[1]
    # The deployed defaults: connections kept a minute, unless the pool keeps them.
    server = start_asgi_server(
        DATABASE_CONN_MAX_AGE="60", DATABASE_POOL_MAX_SIZE=str(POOL), PGAPPNAME=SERVER
    )
    headers = {"Authorization": f"Bearer {token}"}

    def get(n: int) -> int:
        with httpx.Client(base_url=server.url, timeout=30, headers=headers) as http:
            return http.get("/api/v1/sessions/" if n % 2 else "/api/v1/agents/").status_code

    with ThreadPoolExecutor(30) as pool:
        assert set(pool.map(get, range(120))) == {200}
    assert 1 <= server_connections() <= POOL
