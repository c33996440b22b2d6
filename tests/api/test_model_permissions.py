"""Every staff endpoint asks the model permission the admin asks (view, add, change, delete),
not `is_staff`: a staff member holding none is refused everywhere, one holding every other
permission is refused the one they lack, the permission itself (or a superuser) lets them in."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth.models import Group
from django.urls import URLPattern, get_resolver
from rest_framework.permissions import IsAdminUser

from agents.knowledge.models import Document, KnowledgeBase
from config.permissions import ModelPermissions, ModelWritePermissions
from delegation.models import Run
from delegation.runs.create import run_create
from tests.api.conftest import token_client
from tests.factories import grant, make_agent, make_user

pytestmark = pytest.mark.django_db

SOME = uuid.UUID(int=7)

# (method, path, the permission it asks for): every endpoint for staff.
ENDPOINTS = [
    ("get", "/api/v1/tools/", "agents.view_agent"),
    ("post", "/api/v1/agents/", "agents.add_agent"),
    ("patch", "/api/v1/agents/finance/", "agents.change_agent"),
    ("get", "/api/v1/agent-states/", "agents.view_agent"),
    ("get", "/api/v1/mcp-servers/", "mcp.view_mcpserver"),
    ("post", "/api/v1/mcp-servers/", "mcp.add_mcpserver"),
    ("get", "/api/v1/mcp-servers/erp/", "mcp.view_mcpserver"),
    ("patch", "/api/v1/mcp-servers/erp/", "mcp.change_mcpserver"),
    ("delete", "/api/v1/mcp-servers/erp/", "mcp.delete_mcpserver"),
    ("post", "/api/v1/mcp-servers/erp/sync/", "mcp.change_mcpserver"),
    ("get", "/api/v1/mcp-servers/erp/tools/", "mcp.view_mcpserver"),
    ("get", "/api/v1/mcp-servers/erp/syncs/", "mcp.view_mcpserver"),
    ("post", "/api/v1/mcp-servers/erp/syncs/9/accept/", "mcp.change_mcpserver"),
    ("post", "/api/v1/mcp-servers/erp/syncs/9/dismiss/", "mcp.change_mcpserver"),
    ("get", "/api/v1/knowledge-bases/", "knowledge.view_knowledgebase"),
    ("post", "/api/v1/knowledge-bases/", "knowledge.add_knowledgebase"),
    ("get", "/api/v1/knowledge-bases/{kb}/", "knowledge.view_knowledgebase"),
    ("get", "/api/v1/knowledge-bases/{kb}/documents/", "knowledge.view_document"),
    ("post", "/api/v1/knowledge-bases/{kb}/documents/", "knowledge.add_document"),
    ("get", "/api/v1/knowledge-bases/{kb}/documents/{doc}/", "knowledge.view_document"),
    ("delete", "/api/v1/knowledge-bases/{kb}/documents/{doc}/", "knowledge.delete_document"),
    ("get", "/api/v1/activity/", "humans.view_activity"),
    ("get", "/api/v1/activity/export/", "humans.view_activity"),
    ("get", "/api/v1/reviews/", "humans.view_review"),
    ("get", f"/api/v1/reviews/{SOME}/", "humans.view_review"),
    ("post", f"/api/v1/reviews/{SOME}/decision/", "humans.change_review"),
    ("get", "/api/v1/usage/", "usage.view_usagerecord"),
    ("get", "/api/v1/usage/turns/", "usage.view_usagerecord"),
    ("get", "/api/v1/evals/suites/", "evals.view_evalsuite"),
    ("post", "/api/v1/evals/suites/", "evals.add_evalsuite"),
    ("get", "/api/v1/evals/suites/9/", "evals.view_evalsuite"),
    ("patch", "/api/v1/evals/suites/9/", "evals.change_evalsuite"),
    ("delete", "/api/v1/evals/suites/9/", "evals.delete_evalsuite"),
    ("get", "/api/v1/evals/suites/9/cases/", "evals.view_evalcase"),
    ("post", "/api/v1/evals/suites/9/cases/", "evals.add_evalcase"),
    ("get", "/api/v1/evals/suites/9/runs/", "evals.view_evalrun"),
    ("post", "/api/v1/evals/suites/9/runs/", "evals.add_evalrun"),
    ("get", "/api/v1/evals/cases/9/", "evals.view_evalcase"),
    ("patch", "/api/v1/evals/cases/9/", "evals.change_evalcase"),
    ("delete", "/api/v1/evals/cases/9/", "evals.delete_evalcase"),
    ("get", f"/api/v1/evals/runs/{SOME}/", "evals.view_evalrun"),
    ("post", f"/api/v1/evals/runs/{SOME}/cancel/", "evals.add_evalrun"),  # as the admin
    ("get", "/api/v1/evals/drafts/9/", "evals.view_agentdraft"),
    ("post", "/api/v1/evals/drafts/9/publish/", "agents.change_agent"),  # as the admin
    ("post", "/api/v1/evals/drafts/9/discard/", "agents.change_agent"),
]
EVERY_PERMISSION = sorted({perm for _, _, perm in ENDPOINTS})


@pytest.fixture
def objects(db) -> dict[str, int]:
    """An agent, a knowledge base and a document for the paths to name."""
    make_agent("finance")
    kb = KnowledgeBase.objects.create(name="hr", display_name="HR")
    doc = Document.objects.create(
        kb=kb, title="Leave", filename="leave.md", file_type="md", original=b"x", content_hash="0"
    )
    return {"kb": kb.pk, "doc": doc.pk}


def call(user, method: str, path: str, objects: dict[str, int]):
    """The endpoint's answer to `user` (a write with an empty JSON body)."""
    api = token_client(user)
    url = path.format(**objects)
    if method in ("post", "patch"):
        return getattr(api, method)(url, {}, format="json")
    return getattr(api, method)(url)


def approver():
    """A staff member with no model permission: they decide their group's inbox items."""
    member = make_user("ann", is_staff=True)
    member.groups.add(Group.objects.get_or_create(name="Finance")[0])
    return member


def lacking(perm: str) -> list[str]:
    """Every staff endpoint's permission but `perm` (and, for a view, the change of the same
    model, which the admin counts as view)."""
    also = perm.replace(".view_", ".change_") if ".view_" in perm else perm
    return [p for p in EVERY_PERMISSION if p not in (perm, also)]


@pytest.mark.parametrize(("method", "path", "perm"), ENDPOINTS)
def test_a_staff_member_holding_no_permission_is_refused(objects, method, path, perm):
    response = call(approver(), method, path, objects)
    assert response.status_code == 403, (path, response.content)
    assert response.json()["error"]["code"] == "permission_denied"


@pytest.mark.parametrize(("method", "path", "perm"), ENDPOINTS)
def test_a_staff_member_holding_every_other_permission_is_refused(objects, method, path, perm):
    response = call(grant(approver(), *lacking(perm)), method, path, objects)
    assert response.status_code == 403, (path, response.content)


@pytest.mark.parametrize(("method", "path", "perm"), ENDPOINTS)
def test_a_permission_held_by_someone_not_staff_grants_nothing(objects, method, path, perm):
    """As in the admin, which lets no one in who is not staff, whatever their groups give."""
    outsider = grant(make_user("outsider"), *EVERY_PERMISSION)
    response = call(outsider, method, path, objects)
    assert response.status_code in (403, 404), (path, response.content)
    if response.status_code == 404:  # an endpoint serving everyone shows no staff object
        assert method == "get" and "agents" in path, (path, response.content)


@pytest.mark.parametrize(("method", "path", "perm"), ENDPOINTS)
def test_the_permission_lets_a_staff_member_in(objects, method, path, perm):
    for user in (grant(approver(), perm), make_user("root", is_superuser=True, is_staff=True)):
        response = call(user, method, path, objects)
        assert response.status_code not in (401, 403), (path, response.content)
        user.delete()


def test_who_may_change_may_view_as_in_the_admin(objects):
    editor = grant(approver(), "knowledge.change_knowledgebase")
    assert call(editor, "get", "/api/v1/knowledge-bases/", objects).status_code == 200
    assert call(editor, "get", "/api/v1/knowledge-bases/{kb}/", objects).status_code == 200
    refused = call(editor, "post", "/api/v1/knowledge-bases/", objects)
    assert refused.status_code == 403


def test_staff_without_the_view_permission_see_agents_as_users_do(objects):
    secret = make_agent("secret", access_group=Group.objects.create(name="board"))
    secret.system_prompt = "Never reveal the merger."
    secret.save()
    ann = approver()
    listed = {a["name"] for a in token_client(ann).get("/api/v1/agents/").json()}
    assert listed == {"finance"}
    assert token_client(ann).get("/api/v1/agents/secret/").status_code == 404
    assert "system_prompt" not in token_client(ann).get("/api/v1/agents/finance/").json()

    viewer = grant(make_user("vic", is_staff=True), "agents.view_agent")
    listed = {a["name"] for a in token_client(viewer).get("/api/v1/agents/").json()}
    assert listed == {"finance", "secret"}
    shown = token_client(viewer).get("/api/v1/agents/secret/").json()
    assert shown["system_prompt"] == "Never reveal the merger."
    patched = token_client(viewer).patch("/api/v1/agents/secret/", {"system_prompt": "Leak."})
    assert patched.status_code == 403


def test_the_routing_of_a_run_shows_to_who_may_view_runs(objects):
    from chat.models import ChatSession

    agent = make_agent("solo")
    shown = {}
    for user in (approver(), grant(make_user("vic", is_staff=True), "delegation.view_run")):
        session = ChatSession.objects.create(id=uuid.uuid4(), user=user, agent=agent)
        run = run_create(agent=agent, user=user, session=session, task="t", transcript=[])
        Run.objects.filter(pk=run.pk).update(routing={"mode": "STRICT", "policy": "p"})
        shown[user.username] = token_client(user).get(f"/api/v1/runs/{run.pk}/").json()["routing"]
    assert shown == {"ann": None, "vic": {"mode": "STRICT", "policy": "p"}}


def api_views() -> list[type]:
    """The view classes the API's routes serve."""
    found = []
    for pattern in get_resolver("config.api_urls").url_patterns:
        if isinstance(pattern, URLPattern) and hasattr(pattern.callback, "view_class"):
            found.append(pattern.callback.view_class)
    return found


def test_every_endpoint_guarded_by_model_permissions_is_in_the_table():
    from django.urls import resolve

    guarded = {
        view
        for view in api_views()
        if {ModelPermissions, ModelWritePermissions} & set(view.permission_classes)
    }
    tested = {resolve(path.format(kb=1, doc=1)).func.view_class for _, path, _ in ENDPOINTS}
    assert guarded == tested
    assert not [v for v in api_views() if IsAdminUser in v.permission_classes]
