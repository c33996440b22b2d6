"""The demo's finance system over stdio: seeded with the demo, and the offline model uses it
for "上個月還有哪些發票沒付？" in Chinese and English, through the entry agent and the finance
expert."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from agents.mcp.models import McpServer
from agents.models import Agent
from chat.models import ChatMessage, MessageRole
from delegation.models import RunStatus
from tests.humans.helpers import start

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def demo(settings):
    """The demo seeded (its finance system synced over stdio); runs run on commit."""
    settings.TASKS_RUN_SYNC = True
    call_command("seed_demo", verbosity=0)


def test_the_demo_seeds_the_finance_system_and_gives_it_to_the_finance_expert(demo):
    server = McpServer.objects.get(name="finance-system")
    assert server.transport == "stdio" and server.display_names["zh-hant"] == "財務系統"
    assert sorted(server.tools.values_list("name", flat=True)) == [
        "budget_status",
        "mark_invoice_paid",
        "unpaid_invoices",
    ]
    finance = Agent.objects.get(name="finance")
    assert "mcp.finance-system.unpaid_invoices" in finance.tool_keys
    paid = server.tools.get(name="mark_invoice_paid")
    assert paid.needs_approval and not server.tools.get(name="unpaid_invoices").needs_approval
    call_command("seed_demo", verbosity=0)  # a second seed changes nothing
    assert McpServer.objects.count() == 1


@pytest.mark.parametrize(
    "question",
    [
        "上個月還有哪些發票沒付？",
        "上个月还有哪些发票没付？",
        "Which invoices from last month are still unpaid?",
    ],
)
def test_the_offline_model_answers_unpaid_invoices_from_the_finance_system(demo, user, question):
    run = start(user, question)
    assert run.status == RunStatus.SUCCEEDED, run.error
    calls = ChatMessage.objects.filter(session=run.session, role=MessageRole.TOOL)
    names = [m.tool["name"] for m in calls]
    assert "mcp__finance-system__unpaid_invoices" in names, names
    assert "INV-1042" in run.answer and "INV-1044" not in run.answer  # 1044 is paid
