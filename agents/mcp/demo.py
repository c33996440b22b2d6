"""The demo MCP server: the finance system ("財務系統") over stdio, for the finance expert."""

from __future__ import annotations

import logging

from django.db import transaction

from agents.mcp.models import McpServer
from agents.mcp.services import server_sync
from agents.models import Agent
from agents.services import agent_revision_record
from config.errors import AppError

logger = logging.getLogger(__name__)
DEMO_SERVER = "finance-system"
DEMO_TOOLS = ["unpaid_invoices", "budget_status", "mark_invoice_paid"]


def mcp_seed_demo() -> McpServer | None:
    """Create and sync the demo finance server and give its tools to the finance expert, once
    (an admin's later changes stay); None when it exists already or cannot start."""
    if McpServer.objects.filter(name=DEMO_SERVER).exists():
        return None
    server = McpServer.objects.create(
        name=DEMO_SERVER,
        display_name="財務系統 Finance system",
        display_names={"zh-hant": "財務系統", "zh-hans": "财务系统", "en": "Finance system"},
        description="The demo company's invoices and department budgets (a demo MCP server).",
        transport="stdio",
        command="finance-demo",
    )
    try:
        server_sync(server=server)
    except AppError as exc:
        logger.warning("the demo MCP server did not start: %s", exc.message)
        return server
    _give_to_finance()
    return server


@transaction.atomic
def _give_to_finance() -> None:
    """The finance expert of an earlier demo gets the demo server's tools, once (not again if
    an admin removes them later: the server exists then)."""
    finance = Agent.objects.filter(name="finance").first()
    if finance is None:
        return
    keys = [f"mcp.{DEMO_SERVER}.{tool}" for tool in DEMO_TOOLS]
    if all(key in finance.tool_keys for key in keys):  # a new demo team lists them already
        return
    finance.tool_keys = [*finance.tool_keys, *(k for k in keys if k not in finance.tool_keys)]
    finance.save(update_fields=["tool_keys"])
    agent_revision_record(agent=finance, comment="seed_demo gave it the finance system's tools.")
