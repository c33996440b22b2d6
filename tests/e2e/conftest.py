"""Fixtures for multi-process tests: a real Celery worker on the test database and Redis."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection

from config.celery_app import app
from tests.clock import before_saturday_noon
from tests.databases import child_database_url
from tests.postgres import other_sessions_closed
from tests.server_logs import ROOT, follow_log, log_file, output_path


def require_distributed() -> None:
    """Skip, visibly, unless this run is on Postgres with Redis (make test's second pass)."""
    if connection.vendor != "postgresql" or not settings.REDIS_URL:
        pytest.skip("needs DATABASE_URL=postgres://… and REDIS_URL (run `make test`)")


@pytest.fixture
def flush_redis() -> Iterator[None]:
    """An empty Redis database for the broker and the channel layer."""
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.flushdb()
    yield
    client.flushdb()


WORKER_APP_NAME = "test-celery-worker"


class Workers:
    """Starts real `celery worker` processes (prefork, 2 children, unless asked for another pool
    or size; with `-B` beat if asked) on the test database and Redis; kills them with SIGKILL
    or stops them at teardown."""

    def __init__(self, node: pytest.Item | None = None) -> None:
        self.processes: list[subprocess.Popen] = []
        self.node = node

    def start(
        self,
        name: str = "w1",
        *,
        beat: bool = False,
        pool: str = "prefork",
        concurrency: int = 2,
        **env: str,
    ) -> subprocess.Popen:
        """A ready worker (`concurrency` processes, or threads of the `threads` pool) whose
        environment adds `env`."""
        if self.node is not None:
            follow_log(self.node, f"celery-{name}.log")
        full_env = {
            **os.environ,
            "DATABASE_URL": child_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "OFFLINE_MODEL_DELAY_MS": "0",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_CONN_MAX_AGE": "0",
            "DATABASE_POOL_MAX_SIZE": "4",  # as deployed (the test process itself keeps none)
            "PGAPPNAME": WORKER_APP_NAME,  # its sessions, which stop_all waits to see closed
            **env,
        }
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "--loglevel=INFO",
            f"--pool={pool}",
            f"--concurrency={concurrency}",
            "--without-mingle",
            "--without-gossip",
            f"--hostname={name}@%h",
        ]
        if beat:
            command += ["-B", "--schedule", str(output_path(f"beat-{name}"))]
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=full_env,
            stdout=log_file(f"celery-{name}.log"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.processes.append(process)
        _wait_ready(process, name)
        return process

    def kill(self, process: subprocess.Popen) -> None:
        """SIGKILL the worker and its pool children at once, as a crash would."""
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)

    def stop_all(self) -> None:
        """Stop every worker still running."""
        for process in self.processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        other_sessions_closed(names=[WORKER_APP_NAME])  # their backends end a moment later


@pytest.fixture
def workers(django_db_setup, flush_redis, request: pytest.FixtureRequest) -> Iterator[Workers]:
    """Start Celery workers as the test needs them."""
    require_distributed()
    started = Workers(request.node)
    try:
        yield started
    finally:
        started.stop_all()


@pytest.fixture
def celery_worker(workers: Workers) -> subprocess.Popen:
    """One running worker."""
    return workers.start()


def _wait_ready(process: subprocess.Popen, name: str, timeout: float = 30) -> None:
    from config.celery_app import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"celery worker exited; see {output_path(f'celery-{name}.log')}")
        replies = app.control.ping(timeout=0.5)
        if any(name in host for reply in replies for host in reply):
            return
    raise RuntimeError("celery worker did not become ready")


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def asgi_server(django_db_setup, request: pytest.FixtureRequest) -> Iterator[str]:
    """A real daphne process serving the app on the test database (embedded: in-memory layer,
    in-process pool); yields its base URL."""
    server = AsgiServer({}, request.node).start()
    try:
        yield server.url
    finally:
        server.stop()
        other_sessions_closed(names=[server.app_name])  # its backends end a moment later


class RedisServer:
    """A private redis-server on a free port (never the shared one) that a test can kill and
    start again on the same port; nothing is persisted."""

    def __init__(self) -> None:
        self.port = _free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> RedisServer:
        """Start serving and wait until it answers PING."""
        import redis

        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1"]
            + ["--save", "", "--appendonly", "no", "--dir", str(ROOT / "test-output")],
            stdout=log_file("redis.log"),
            stderr=subprocess.STDOUT,
        )
        client = redis.Redis.from_url(self.url, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"redis-server did not start; see {output_path('redis.log')}"
                    ) from None
                time.sleep(0.05)
            finally:
                client.close()

    def kill(self) -> None:
        """SIGKILL the server, as a crash or a container restart would."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A running private Redis a test may kill and restart (the machine's Redis is shared)."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is not installed (apt-get install redis-server)")
    server = RedisServer().start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture
def broker(private_redis: RedisServer, settings) -> Iterator[RedisServer]:
    """The private Redis as this test process's broker and channel layer, as the workers
    started with REDIS_URL=broker.url use it."""
    saved = app.conf.broker_url
    app.conf.broker_url = private_redis.url
    app._pool, app.amqp._producer_pool = None, None
    settings.CELERY_BROKER_URL = private_redis.url
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [private_redis.url]},
        }
    }
    yield private_redis
    app.conf.broker_url = saved
    app._pool, app.amqp._producer_pool = None, None


def session_cookie(user: Any) -> str:
    """A Cookie header value that signs `user` in (the session is stored in the database)."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


CHROMIUM = "/usr/bin/chromium"


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


class _Chromium:
    """One Chromium for a test module, launched on first use and again if it died: starting
    Playwright and a browser per test cost about 1.3 s each, a fresh context is 0.35 s."""

    def __init__(self, playwright: Any, args: list[str]) -> None:
        self.playwright = playwright
        self.args = args
        self.browser: Any = None

    def get(self) -> Any:
        """A connected browser."""
        if self.browser is None or not self.browser.is_connected():
            self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=self.args)
        return self.browser


@pytest.fixture(scope="module")
def chromium() -> Iterator[_Chromium]:
    """Debian's headless Chromium driven by Playwright (never a downloaded browser), shared by a
    module's browser tests; each test gets its own context (cookies, storage, permissions).

    Playwright's sync API keeps its event loop running on this thread while it lives, which
    Django takes for async code: the module's own database work (fixtures, checks) is allowed
    with DJANGO_ALLOW_ASYNC_UNSAFE, for this module only (the servers under test are separate
    processes, untouched). Module scope, not session: a plain `pytest` over the whole suite
    would otherwise run its async tests beside a foreign running loop."""
    with shared_chromium(CHROMIUM_ARGS) as shared:
        yield shared


@contextlib.contextmanager
def shared_chromium(args: list[str]) -> Iterator[_Chromium]:
    """The `chromium` fixture's browser launched with `args`: a module that needs other flags
    (a fake microphone) overrides `chromium` with this."""
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI") == "true":
            pytest.fail("chromium is not installed; .ci/run installs it (apt-get install chromium)")
        pytest.skip("chromium is not installed: apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        shared = _Chromium(playwright, args)
        try:
            yield shared
        finally:
            if shared.browser is not None:
                shared.browser.close()


@pytest.fixture
def browser_page(chromium: _Chromium) -> Iterator[object]:
    """A page in a fresh browser context (nothing carried over from another test); every context
    the test opened on the browser is closed afterwards."""
    yield from _page(chromium)


@pytest.fixture
def errand_page(chromium: _Chromium) -> Iterator[object]:
    """`browser_page`, its clock in a zone where Saturday morning is still to come."""
    yield from _page(chromium, timezone_id=before_saturday_noon())


def _page(chromium: _Chromium, **options: Any) -> Iterator[object]:
    browser = chromium.get()
    context = browser.new_context(viewport={"width": 1100, "height": 760}, **options)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    page.on("pageerror", lambda e: page.console_errors.append(f"uncaught: {e}"))
    try:
        yield page
    finally:
        for opened in list(browser.contexts):  # a test may open more (a second user's page)
            opened.close()


def screenshot(page: object, name: str) -> None:
    """Save a screenshot under test-output/screenshots for a person to look at."""
    folder = ROOT / "test-output" / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def screenshots(page: Any, name: str) -> None:
    """Four screenshots of the page as it is: light and dark, desktop and a 390 px phone
    (`<name>-light.png`, `-dark`, `-phone-light`, `-phone-dark`); the viewport and colour scheme
    are put back afterwards."""
    size = page.viewport_size
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        screenshot(page, f"{name}-{scheme}")
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)  # the sidebar slides out of view as the layout changes
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        screenshot(page, f"{name}-phone-{scheme}")
    page.emulate_media(color_scheme="light")
    page.set_viewport_size(size)
    page.wait_for_timeout(300)


class AsgiServer:
    """A daphne process on a fixed port that a test can kill (as a crash would) and start
    again; the environment adds `env` (e.g. the fake OpenAI server's URL). Without REDIS_URL in
    `env` it runs embedded (in-memory layer, in-process pool); with it, distributed."""

    def __init__(self, env: dict[str, str], node: pytest.Item | None = None) -> None:
        if node is not None:
            follow_log(node, "daphne.log")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app_name = f"test-asgi-{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": child_database_url(),
            "OFFLINE_MODEL_DELAY_MS": "30",
            "DJANGO_DEBUG": "true",
            "DJANGO_SETTINGS_MODULE": "config.settings",
            "DATABASE_POOL_MAX_SIZE": "4",  # as deployed (the test process itself keeps none)
            "PGAPPNAME": self.app_name,  # its sessions, which `stop` waits to see closed
            **env,
        }
        if "REDIS_URL" not in env:  # one process: in-memory layer, in-process pool
            self.env.pop("REDIS_URL", None)
        self.process: subprocess.Popen | None = None

    def start(self) -> AsgiServer:
        """Start serving and wait until the port accepts connections."""
        import socket

        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
            + ["--websocket-max-message-size", str(settings.WS_SERVER_MAX_BYTES)]
            + ["--websocket-max-frame-size", str(settings.WS_SERVER_MAX_BYTES)]
            + ["config.asgi:application"],
            cwd=ROOT,
            env=self.env,
            stdout=log_file("daphne.log"),
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"daphne did not start; see {output_path('daphne.log')}"
                    ) from None
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL the server: open sockets drop, in-process work dies mid-step."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Terminate the server if it runs."""
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture
def start_asgi_server(django_db_setup, request: pytest.FixtureRequest) -> Iterator[Any]:
    """Start daphne processes with extra environment: `start_asgi_server(**env)`; all are
    stopped at teardown. Request it (and create data) before `browser_page`."""
    servers: list[AsgiServer] = []

    def start(**env: str) -> AsgiServer:
        server = AsgiServer(env, request.node).start()
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()
        other_sessions_closed(names=[server.app_name for server in servers])


@pytest.fixture(scope="module")
def module_asgi_server(django_db_setup, django_db_blocker) -> Iterator[AsgiServer]:
    """One daphne process for a module's tests (starting one costs 2-3 s): for tests that need
    no server settings of their own and keep their data in their own rows (each transactional
    test's rows are flushed after it, while the server stays)."""
    server = AsgiServer({}).start()
    try:
        yield server
    finally:
        server.stop()
        with django_db_blocker.unblock():
            other_sessions_closed(names=[server.app_name])  # its backends end a moment later


def phone(page: Any) -> None:
    """Resize the page to a 390 px wide phone screen."""
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(300)  # the sidebar slides out of view as the layout changes


def sign_in_as(page: Any, base_url: str, username: str = "alice", path: str = "/") -> None:
    """Sign in through the login form and wait for the chat socket."""
    page.goto(base_url + path)
    page.fill("#id_username", username)
    page.fill("#id_password", "pw")
    page.click("button[type=submit]")
    page.wait_for_selector("#status[data-state=connected]")
