"""In the browser: a watch's finding shows as a toast on the open chat page (the server's own
beat ran the check), its button mutes the watch, and the watches page unmutes it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from reminders.watches.models import Watch, WatchState
from reminders.watches.services import watch_save
from tests.e2e.conftest import (  # noqa: F401 (fixtures)
    browser_page,
    chromium,
    screenshot,
    screenshots,
    sign_in_as,
    start_asgi_server,
)
from tests.factories import make_agent, make_user
from tests.watches.conftest import CHECK, overdue_task

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_toast_appears_and_mutes_the_watch(start_asgi_server, browser_page):  # noqa: F811
    alice = make_user("alice")
    make_agent("assistant", display_name="Assistant", is_entry=True)
    expert = make_agent("planner", display_name="Planner", tool_keys=["query_tasks"])
    overdue_task(alice, "File the tax return")
    server = start_asgi_server(WATCH_TICK_SECONDS="1")  # its in-process beat ticks each second
    page = browser_page
    sign_in_as(page, server.url)

    watch = Watch(name="Overdue tasks", agent=expert, prompt=CHECK, schedule="every day at 00:00")
    watch_save(watch=watch, now=timezone.now() - timedelta(days=2))  # a slot is due at once
    watch.users.add(alice)

    toast = page.locator(".toast", has_text="File the tax return")
    toast.wait_for(timeout=30_000)
    assert toast.locator("strong").inner_text() == "Overdue tasks found something"
    screenshot(page, "autonomy-watches-toast")
    toast.locator("button:text('Mute this watch')").click()
    page.locator(".toast", has_text="is muted").wait_for()
    assert WatchState.objects.get(watch=watch, user=alice).muted

    page.goto(server.url + "/watches/")
    item = page.locator(f".watch-item[data-watch='{watch.pk}']")
    assert item.get_attribute("data-muted") == "true"
    assert "every day at 00:00" in item.inner_text()
    screenshots(page, "autonomy-watches-page")
    item.locator("button:text('Unmute')").click()
    page.locator(".planner-status", has_text="no longer muted").wait_for()
    assert not WatchState.objects.get(watch=watch, user=alice).muted
    assert page.console_errors == []
