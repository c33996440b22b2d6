"""/api/docs/ groups operations by area: every operation of the schema has one area tag, from
one table in config/schema.py, listed in that table's order."""

from __future__ import annotations

import pytest

from config.schema import AREAS, area_of

pytestmark = pytest.mark.django_db


def test_every_operation_is_in_its_area(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    tags = {}
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            if isinstance(operation, dict) and "responses" in operation:
                assert len(operation["tags"]) == 1, (path, method)
                tags[(path, method)] = operation["tags"][0]
    assert tags[("/api/v1/sessions/{session_id}/messages/", "get")] == "Chat"
    assert tags[("/api/v1/sessions/{session_id}/events/", "get")] == "Chat"
    assert tags[("/api/v1/sessions/{session_id}/memory/", "get")] == "Routing"
    assert tags[("/api/v1/runs/{run_id}/events/", "get")] == "Runs"
    assert tags[("/api/v1/agents/", "get")] == "Agents"
    assert tags[("/api/v1/knowledge-bases/", "get")] == "Knowledge"
    assert tags[("/api/v1/inbox/", "get")] == "Inbox"
    assert tags[("/api/v1/usage/", "get")] == "Usage"
    assert tags[("/api/v1/evals/suites/", "get")] == "Evals"
    assert tags[("/api/v1/mcp-servers/", "get")] == "MCP"
    assert "v1" not in tags.values() and "events" not in tags.values()
    listed = [t["name"] for t in schema["tags"]]
    order = [area for area, _about, _segments in AREAS]
    assert listed == sorted(listed, key=lambda a: order.index(a) if a in order else len(order))
    assert set(listed) == set(tags.values())


@pytest.mark.parametrize(
    ("path", "area"),
    [
        ("/api/v1/planner/tasks/3/", "Reminders"),
        ("/api/v1/sessions/search/", "Chat"),
        ("/api/v1/widgets/1/", "Widgets"),
    ],
)
def test_a_path_finds_its_area_and_a_new_prefix_gets_its_own(path, area):
    assert area_of(path) == area
