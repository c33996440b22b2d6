"""The report in a real browser (Debian's Chromium, a daphne process, its in-process pool): a
run started from admin shows its progress bar, reloads itself without script and ends on the
verdict; nothing breaks the site's CSP."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from tests.e2e.conftest import browser_page, chromium, screenshot, start_asgi_server  # noqa: F401
from tests.evals.conftest import make_case, make_suite
from tests.factories import make_agent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def suite(db) -> Any:
    """Written before the server and browser start."""
    get_user_model().objects.create_superuser("boss", password="pw")
    suite = make_suite(
        make_agent("assistant", is_entry=True, tool_keys=["calculate"]), name="arith"
    )
    for a in range(1, 4):
        make_case(
            suite,
            f"what is {a}*{a}?",
            name=f"squares {a}",
            expect={"answer_contains": [str(a * a)]},
        )
    return suite


def verdict(page: Any) -> str:
    """The report's verdict, or "" while the page is between two of its reloads."""
    try:
        return page.locator("#evals-verdict").inner_text(timeout=1000)
    except Exception:  # the document was replaced by the refresh mid-read
        return ""


def test_a_run_shows_progress_then_its_verdict(suite, start_asgi_server, browser_page):  # noqa: F811
    server = start_asgi_server(OFFLINE_MODEL_DELAY_MS="120")  # each case takes a moment
    page = browser_page
    failed: list[str] = []
    page.on("response", lambda r: r.status >= 400 and failed.append(f"{r.status} {r.url}"))
    page.goto(f"{server.url}/admin/login/?next=/admin/evals/evalsuite/{suite.pk}/run/")
    page.fill("#id_username", "boss")
    page.fill("#id_password", "pw")
    page.click("input[type=submit]")
    page.fill("#id_model", "offline")
    page.click("#evals-run-form input[type=submit]")
    page.wait_for_selector("progress")
    assert "cases done" in page.inner_text(".evals-progress")
    screenshot(page, "evals-report-running")
    end = time.monotonic() + 60
    while verdict(page) != "PASSED" and time.monotonic() < end:
        time.sleep(0.3)
    assert verdict(page) == "PASSED"
    assert "3/3 passed (100.0%)" in page.inner_text("#evals-summary")
    assert page.locator("progress").count() == 0
    page.click("details summary")  # the evidence unfolds without script
    assert "squares 1" in page.inner_text("#evals-cases")
    screenshot(page, "evals-report-done")
    # No CSP refusal or script error; a resource the page asked for failing would be in
    # `failed` (Chromium's own /favicon.ico request, absent from the admin, is not).
    assert failed == []
    assert [e for e in page.console_errors if not e.startswith("Failed to load resource")] == []
