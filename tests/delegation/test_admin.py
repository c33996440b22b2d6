"""The runs admin: turns as trees, filters, read-only."""

from __future__ import annotations

import uuid

import pytest

from chat.models import ChatSession
from delegation.models import Run, RunStatus
from delegation.runs.create import run_create
from delegation.selectors import run_tree
from tests.factories import make_agent, make_child_run, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def turn(user):
    boss, finance, sql, hr = (make_agent(n) for n in ("boss", "finance", "sql", "hr"))
    session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=boss)
    root = run_create(agent=boss, user=user, session=session, task="q", transcript=[])
    f = make_child_run(
        caller=root,
        target=finance,
        call_id="c1",
        prompt="money?",
        reason="budget words",
        max_steps=5,
    )
    h = make_child_run(
        caller=root, target=hr, call_id="c2", prompt="people?", reason="", max_steps=5
    )
    s = make_child_run(
        caller=Run.objects.get(pk=f.pk),
        target=sql,
        call_id="c3",
        prompt="query",
        reason="",
        max_steps=5,
    )
    Run.objects.filter(pk=s.pk).update(
        status=RunStatus.FAILED, error={"code": "model_error", "message": "boom"}
    )
    return root, f, s, h


def test_tree_is_depth_first(turn):
    root, finance, sql, hr = turn
    assert [r.pk for r in run_tree(run=sql)] == [root.pk, finance.pk, sql.pk, hr.pk]


def test_run_page_shows_the_whole_turn_as_a_tree(admin_client, turn):
    root, finance, sql, hr = turn
    page = admin_client.get(f"/admin/delegation/run/{sql.pk}/change/").content.decode()
    tree = page.split('id="delegation-tree"', 1)[1]
    order = [tree.index(f"/admin/delegation/run/{r.pk}/change/") for r in (root, finance, sql, hr)]
    assert order == sorted(order)
    assert "budget words" in tree and "boom" in tree and "padding-left:3.0em" in tree


def test_changelist_filters_by_agent_status_and_user(admin_client, turn, other_user):
    root, finance, sql, hr = turn
    page = admin_client.get("/admin/delegation/run/?status=failed").content.decode()
    assert f"/admin/delegation/run/{sql.pk}/change/" in page
    assert f"/admin/delegation/run/{root.pk}/change/" not in page
    page = admin_client.get(f"/admin/delegation/run/?agent__id__exact={finance.agent_id}")
    assert f"/admin/delegation/run/{finance.pk}/change/" in page.content.decode()
    session = ChatSession.objects.create(id=uuid.uuid4(), user=other_user)
    theirs = run_create(agent=root.agent, user=other_user, session=session, task="t", transcript=[])
    page = admin_client.get(f"/admin/delegation/run/?user__id__exact={other_user.pk}")
    assert f"/admin/delegation/run/{theirs.pk}/change/" in page.content.decode()
    assert f"/admin/delegation/run/{root.pk}/change/" not in page.content.decode()


def test_runs_cannot_be_added_or_edited(admin_client, turn):
    root = turn[0]
    assert admin_client.get("/admin/delegation/run/add/").status_code == 403
    response = admin_client.post(f"/admin/delegation/run/{root.pk}/change/", {"task": "x"})
    assert response.status_code == 403
    assert make_user("bob").runs.count() == 0
