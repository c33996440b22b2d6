"""The demo's "財務系統" (finance system): a small MCP server over stdio with invoices and budgets.

`make run` links it to the finance expert through MCP_STDIO_COMMANDS ("finance-demo"), so the
demo shows an expert reaching a company system without a key or a network. Its data is made up
and dated relative to today; marking an invoice paid changes it only in this process.
Run it on its own: `python -m agents.mcp.demo_finance` (stdio) or `... --http 8765`.
"""

from __future__ import annotations

import sys
from datetime import date, timedelta
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer(
    "finance-demo",
    title="財務系統 Finance system (demo)",
    instructions="Invoices and department budgets of the demo company.",
    log_level="WARNING",
)


def _last_month(day: int) -> str:
    """A date of the previous month, as YYYY-MM-DD."""
    first = date.today().replace(day=1)
    previous = (first - timedelta(days=1)).replace(day=1)
    return previous.replace(day=min(day, 28)).isoformat()


INVOICES: list[dict[str, Any]] = [
    {"number": "INV-1042", "vendor": "台灣電力公司 Taiwan Power", "amount": 48200,
     "currency": "TWD", "issued": _last_month(3), "paid": False},
    {"number": "INV-1043", "vendor": "雲端主機 CloudHost Ltd.", "amount": 1650,
     "currency": "USD", "issued": _last_month(11), "paid": False},
    {"number": "INV-1044", "vendor": "辦公用品 Office Supplies Co.", "amount": 12800,
     "currency": "TWD", "issued": _last_month(17), "paid": True},
    {"number": "INV-1045", "vendor": "法律顧問 Lee & Partners", "amount": 90000,
     "currency": "TWD", "issued": _last_month(24), "paid": False},
]  # fmt: skip
BUDGETS = {
    "finance": {"budget": 2_400_000, "spent": 1_520_000},
    "hr": {"budget": 1_800_000, "spent": 1_710_000},
    "engineering": {"budget": 6_000_000, "spent": 3_950_000},
}


def _line(invoice: dict[str, Any]) -> str:
    state = "已付 paid" if invoice["paid"] else "未付 unpaid"
    return (
        f"{invoice['number']} · {invoice['vendor']} · {invoice['currency']} "
        f"{invoice['amount']:,} · 開立 issued {invoice['issued']} · {state}"
    )


@server.tool(
    title="未付發票 Unpaid invoices",
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)
def unpaid_invoices() -> dict[str, Any]:
    """List the invoices not yet paid (未付款、沒付、還沒付的發票 / unpaid, outstanding invoices),
    with vendor, amount and issue date."""
    unpaid = [i for i in INVOICES if not i["paid"]]
    return {
        "summary": f"{len(unpaid)} 張未付發票 unpaid invoices:\n"
        + "\n".join(_line(i) for i in unpaid),
        "invoices": unpaid,
    }


@server.tool(
    title="部門預算 Department budget",
    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True),
)
def budget_status(department: str = "finance") -> dict[str, Any]:
    """A department's budget, spending and what is left (部門預算、剩餘預算 / budget left).
    Departments: finance, hr, engineering."""
    row = BUDGETS.get(department.lower())
    if row is None:
        raise ValueError(f"Unknown department {department!r}: finance, hr or engineering.")
    left = row["budget"] - row["spent"]
    return {"department": department, **row, "left": left, "currency": "TWD"}


@server.tool(
    title="標記已付 Mark an invoice paid",
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True),
)
def mark_invoice_paid(number: str) -> str:
    """Mark an invoice as paid (標記發票已付款). Changes the finance system."""
    for invoice in INVOICES:
        if invoice["number"] == number:
            invoice["paid"] = True
            return f"{number} 已標記為已付 marked paid."
    raise ValueError(f"No invoice {number}.")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", port=int(sys.argv[2]))
    else:
        server.run()
