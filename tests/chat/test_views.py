"""The chat page names the entry agent and its experts in the page's language."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.demo import seed_demo_agents

pytestmark = pytest.mark.django_db


def page(user, accept_language: str) -> Client:
    client = Client(HTTP_ACCEPT_LANGUAGE=accept_language)
    client.force_login(user)
    return client.get("/")


@pytest.mark.parametrize(
    ("accept_language", "expected", "absent"),
    [
        ("zh-TW", ["財務專家", "天氣專家", "助理"], ["Finance expert", "财务专家"]),
        ("zh-CN", ["财务专家", "天气专家"], ["Finance expert", "財務專家"]),
        ("en", ["Finance expert", "Weather expert"], ["財務專家"]),
    ],
)
def test_experts_are_listed_by_their_names_in_the_pages_language(
    user, accept_language, expected, absent
):
    seed_demo_agents()
    answer = page(user, accept_language)
    assert answer.status_code == 200
    context = answer.context
    for name in expected:
        assert name in context["experts"] or name == context["entry_name"], (name, context)
    listed = " ".join(context["experts"])
    for name in absent:
        assert name not in listed
    if accept_language != "en":
        assert "、" in context["experts_joined"]  # a Chinese list
    assert context["experts"] == sorted(context["experts"])
