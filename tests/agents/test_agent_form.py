"""The agent form as an admin meets it: one tools picker with titles, descriptions and an
approval toggle each; model suggestions from the provider; a preview of the unsaved form."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from django.core.cache import cache

from agents.models import Agent
from chat.models import ChatSession
from delegation.evals.sandbox import is_sandbox_user
from delegation.models import Run
from tests.agents.test_admin import agent_data, change_url
from tests.factories import make_agent, make_user

pytestmark = pytest.mark.django_db

MODELS_URL = "/admin/agents/agent/models/"


@pytest.fixture
def admin_client(client, admin_user):
    client.force_login(admin_user)
    return client


@pytest.fixture
def helper() -> Agent:
    return make_agent("helper", system_prompt="Be helpful.", tool_keys=["calculate"])


def test_tools_are_one_list_with_titles_descriptions_and_approval_toggles(admin_client, helper):
    html = admin_client.get(change_url(helper)).content.decode()
    assert html.count('class="tool-picker"') == 1
    assert 'type="checkbox" name="tool_keys" value="create_task"' in html
    assert 'name="approval_tool_keys" value="create_task"' in html
    assert 'name="require_approval"' in html
    assert 'class="tool-picker-search"' in html
    assert "changes data" in html  # create_task's badge
    assert 'name="approval_tool_keys"' in html and 'id="id_approval_tool_keys"' not in html
    assert 'list="id_model-options"' in html  # the model name offers the provider's models


def test_the_approval_toggles_write_the_agents_approval_fields(admin_client, helper):
    data = agent_data(
        helper, tool_keys=["calculate", "create_task"], approval_tool_keys=["create_task"]
    )
    data["require_approval"] = "on"
    assert admin_client.post(change_url(helper), data).status_code == 302
    helper.refresh_from_db()
    assert helper.tool_keys == ["calculate", "create_task"]
    assert helper.require_approval and helper.approval_tool_keys == ["create_task"]
    page = admin_client.get(change_url(helper)).content.decode()
    assert 'name="approval_tool_keys" value="create_task" checked' in page
    off = agent_data(helper, tool_keys=["calculate"], approval_tool_keys=[])
    assert admin_client.post(change_url(helper), off).status_code == 302
    helper.refresh_from_db()
    assert not helper.require_approval and helper.approval_tool_keys == []


def test_an_unknown_approval_key_is_refused_and_nothing_is_lost(admin_client, helper):
    data = agent_data(helper, system_prompt="Changed.", approval_tool_keys=["rm_rf"])
    response = admin_client.post(change_url(helper), data)
    assert response.status_code == 200
    assert "approval_tool_keys" in response.context["adminform"].form.errors
    assert Agent.objects.get(pk=helper.pk).system_prompt == "Be helpful."
    assert "Changed." in response.content.decode()  # the admin's edit is still in the form


def test_the_offline_model_lists_its_own_name(admin_client):
    response = admin_client.get(MODELS_URL, {"provider": "offline"})
    assert response.json() == {"models": ["offline"], "error": ""}


class _Models(BaseHTTPRequestHandler):
    status = 200

    def do_GET(self) -> None:
        body = {"object": "list", "data": [{"id": m, "object": "model"} for m in ("m2", "m1")]}
        payload = json.dumps(body if self.status == 200 else {"error": {"message": "no"}})
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def models_server(settings) -> Iterator[type[_Models]]:
    handler = type("Handler", (_Models,), {"status": 200})
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.OPENAI_BASE_URL = f"http://127.0.0.1:{server.server_port}/v1"
    settings.OPENAI_API_KEY = "sk-test"
    cache.clear()
    yield handler
    server.shutdown()
    server.server_close()
    cache.clear()


def test_the_openai_models_come_from_the_servers_model_list(admin_client, models_server):
    response = admin_client.get(MODELS_URL, {"provider": "openai"})
    assert response.json() == {"models": ["m1", "m2"], "error": ""}


def test_a_failing_model_list_says_so(admin_client, models_server):
    models_server.status = 500
    response = admin_client.get(MODELS_URL, {"provider": "openai"})
    assert response.json() == {"models": [], "error": "Couldn't load models."}


def test_the_model_list_is_for_staff_only(client):
    client.force_login(make_user("alice"))
    assert client.get(MODELS_URL).status_code == 302  # to the admin's login


@pytest.mark.django_db(transaction=True)
def test_the_preview_answers_with_the_unsaved_form_in_a_sandbox(admin_client, settings, helper):
    settings.TASKS_RUN_SYNC = True
    data = agent_data(helper, system_prompt="Unsaved prompt.", tool_keys=["calculate"])
    data["preview_message"] = "what is 6*7"
    started = admin_client.post(f"/admin/agents/agent/{helper.pk}/preview/", data)
    assert started.status_code == 200, started.content
    body = started.json()
    status = admin_client.get(body["status_url"]).json()
    assert status["final"] and status["status"] == "succeeded", status
    assert "42" in status["answer"]
    assert status["trace_url"] == f"/admin/delegation/run/{body['run_id']}/change/"
    run = Run.objects.get(pk=body["run_id"])
    assert run.agent_config["system_prompt"] == "Unsaved prompt."
    assert is_sandbox_user(run.user)
    live = Agent.objects.get(pk=helper.pk)
    assert live.system_prompt == "Be helpful." and live.version == helper.version
    assert not ChatSession.objects.exclude(user=run.user).exists()  # no real user's chat
    again = dict(data, preview_session=body["session_id"], preview_message="and 2+2")
    follow = admin_client.post(f"/admin/agents/agent/{helper.pk}/preview/", again).json()
    assert follow["session_id"] == body["session_id"]


def test_the_preview_refuses_an_invalid_form_with_its_errors(admin_client, helper):
    data = agent_data(helper, tool_keys=["rm_rf"])
    data["preview_message"] = "hello"
    response = admin_client.post(f"/admin/agents/agent/{helper.pk}/preview/", data)
    assert response.status_code == 400
    assert "tool_keys" in response.json()["fields"]
    assert not Run.objects.exists()


def test_the_preview_status_is_not_a_window_on_real_users_runs(admin_client, helper):
    from delegation.runs.create import run_create

    alice = make_user("alice")
    session = ChatSession.objects.create(id=uuid.uuid4(), user=alice, agent=helper)
    run = run_create(agent=helper, user=alice, session=session, task="secret", transcript=[])
    assert admin_client.get(f"/admin/agents/agent/preview/{run.pk}/").status_code == 404


def test_names_and_descriptions_per_language_are_three_labelled_inputs(admin_client, helper):
    page = admin_client.get(change_url(helper)).content.decode()
    assert 'name="display_names_zh-hant"' in page and ">繁體中文</label>" in page
    data = agent_data(helper)
    data |= {"display_names_zh-hant": "幫手", "display_names_en": "Helper", "descriptions_en": ""}
    assert admin_client.post(change_url(helper), data).status_code == 302
    helper.refresh_from_db()
    assert helper.display_names == {"en": "Helper", "zh-hant": "幫手"}
    assert helper.descriptions == {}
    version = helper.version
    assert admin_client.post(change_url(helper), data).status_code == 302
    assert Agent.objects.get(pk=helper.pk).version == version  # the same names: no new version
