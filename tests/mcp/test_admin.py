"""The MCP admin in the admin's language: syncing from the servers' list, the server's tools,
and a sync's changes with its accept and dismiss buttons, in 繁體中文 and English."""

from __future__ import annotations

import pytest

from agents.mcp.models import McpSync, McpTool, SyncStatus
from tests.mcp.test_sync import variant_two

pytestmark = pytest.mark.django_db


def sync_from_the_list(admin_client, server) -> list[str]:
    """Run "Sync tools now" on the server from its list; the messages the admin then reads."""
    page = admin_client.post(
        "/admin/mcp/mcpserver/",
        {"action": "sync_tools", "_selected_action": [server.pk]},
        follow=True,
    )
    assert page.status_code == 200
    return [str(message) for message in page.context["messages"]]


def test_an_admin_reading_chinese_syncs_reviews_and_accepts_in_chinese(
    stdio_server, settings, ledger_log, admin_client
):
    admin_client.cookies["django_language"] = "zh-hant"
    assert sync_from_the_list(admin_client, stdio_server) == [
        f"ledger：{McpTool.objects.filter(server=stdio_server).count()} 個工具，已套用。"
    ]
    page = admin_client.get(f"/admin/mcp/mcpserver/{stdio_server.pk}/change/").content.decode()
    assert "工具（核准設為「依其註記」時" in page and "需要核准" in page
    assert "—（不是使用簽署聲明的伺服器）" in page and '<div class="readonly">無。</div>' in page
    assert "approval:" not in page.lower() and "Needs approval" not in page

    variant_two(settings, ledger_log)
    assert sync_from_the_list(admin_client, stdio_server) == [
        "ledger：伺服器的工具已變更，請檢視這次同步並決定是否接受。"
    ]
    sync = McpSync.objects.get(status=SyncStatus.PENDING)
    # The server's page links to the sync waiting for review.
    page = admin_client.get(f"/admin/mcp/mcpserver/{stdio_server.pk}/change/").content.decode()
    review = f'<a href="/admin/mcp/mcpsync/{sync.pk}/change/">檢視後接受或略過</a>'
    assert review in page
    page = admin_client.get(f"/admin/mcp/mcpsync/{sync.pk}/change/").content.decode()
    assert "<b>已新增</b> multiply" in page
    assert "<b>已移除</b> shout：已不在清單中" in page
    assert "<b>已變更</b> add：說明、輸入結構描述" in page
    assert "<th>變更前</th><th>變更後</th>" in page
    assert 'value="接受變更"' in page and 'value="略過（已變更的工具維持擱置）"' in page

    answer = admin_client.post(f"/admin/mcp/mcpsync/{sync.pk}/change/", {"_accept": "1"})
    assert answer.status_code == 302
    page = admin_client.get(answer["Location"])
    assert [str(m) for m in page.context["messages"]] == ["ledger：已接受變更。"]


def test_the_same_pages_read_in_english_count_tools_in_words(
    stdio_server, settings, ledger_log, admin_client
):
    admin_client.cookies["django_language"] = "en"
    tools = sync_from_the_list(admin_client, stdio_server)
    assert tools == [f"ledger: {McpTool.objects.count()} tools, applied."]
    variant_two(settings, ledger_log)
    sync_from_the_list(admin_client, stdio_server)
    sync = McpSync.objects.get(status=SyncStatus.PENDING)
    page = admin_client.get(f"/admin/mcp/mcpsync/{sync.pk}/change/").content.decode()
    assert "<b>Changed</b> add: description and input schema" in page
    answer = admin_client.post(f"/admin/mcp/mcpsync/{sync.pk}/change/", {"_dismiss": "1"})
    page = admin_client.get(answer["Location"])
    assert [str(m) for m in page.context["messages"]] == ["ledger: changes dismissed."]
