"""Helpers for humans tests: start a turn synchronously, read tool results the model got."""

from __future__ import annotations

import json
import uuid
from typing import Any

from rest_framework.test import APIClient

from chat.tokens import token_create
from delegation.models import Run
from delegation.turns import turn_start


def start(user: Any, text: str = "please help") -> Run:
    """Start a turn (with TASKS_RUN_SYNC it runs until it ends or waits) and reload its run."""
    sent = turn_start(user=user, session_id=uuid.uuid4(), message_id=uuid.uuid4(), text=text)
    return Run.objects.get(pk=sent.run.id)


def client(user: Any) -> APIClient:
    """A REST client authenticated as `user` by API token."""
    _, raw = token_create(user=user, name="test")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return api


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool results (parsed) a model request carried."""
    return [json.loads(m["content"]) for m in request["messages"] if m["role"] == "tool"]


def decide(api: APIClient, item_id: Any, **body: Any) -> Any:
    """POST a decision; the response."""
    return api.post(f"/api/v1/inbox/{item_id}/decision/", body, format="json")
