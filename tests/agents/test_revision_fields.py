"""Revision diffs field by field: scalars old → new, lists item by item, text line by line."""

from __future__ import annotations

import pytest

from agents.models import AgentRevision
from agents.revision_fields import revision_field_diff
from agents.services import agent_save
from tests.factories import make_agent

pytestmark = pytest.mark.django_db


@pytest.fixture
def helper():
    sql = make_agent("sql")
    agent = make_agent("helper", tags=["alpha", "beta"], system_prompt="Line one.\nLine two.")
    agent_save(
        agent=agent,
        data={
            "tags": ["beta", "gamma"],
            "system_prompt": "Line one.\nLine 2.",
            "max_steps": 9,
            "allowed_subagents": [sql],
        },
        comment="edit",
    )
    return agent


def diff(agent, version):
    revision = AgentRevision.objects.get(agent=agent, version=version)
    older = AgentRevision.objects.filter(agent=agent, version=version - 1).first()
    return {c.name: c for c in revision_field_diff(revision=revision, against=older)}


def test_only_changed_fields_each_in_its_kind(helper):
    changes = diff(helper, 2)
    assert set(changes) == {"tags", "system_prompt", "max_steps", "allowed_subagents"}
    assert (changes["max_steps"].old, changes["max_steps"].new) == ("8", "9")
    assert changes["tags"].items == [("-", "alpha"), ("+", "gamma"), (" ", "beta")]
    assert changes["allowed_subagents"].items == [("+", "sql")]
    assert changes["system_prompt"].items == [
        (" ", "Line one."),
        ("-", "Line two."),
        ("+", "Line 2."),
    ]


def test_first_revision_lists_what_was_set(helper):
    changes = diff(helper, 1)
    assert changes["name"].new == "helper" and "model" not in changes  # blank left out


def test_revisions_page_is_a_coloured_field_diff(admin_client, helper):
    page = admin_client.get(f"/admin/agents/agent/{helper.pk}/revisions/").content.decode()
    newest = page.split('class="revision-diff"', 1)[1].split("</table>", 1)[0]
    row = newest.split('data-field="max_steps"', 1)[1].split("</tr>", 1)[0]
    assert 'class="diff-old"' in row and ">8</del> → " in row and ">9</ins>" in row
    assert '<del class="diff-old"' in newest.split('data-field="tags"', 1)[1]
    assert "− alpha" in newest and "+ gamma" in newest and "+ Line 2." in newest
    assert 'data-field="display_name"' not in newest
