"""The offline model's reading of a standing order in words, English or Chinese (either
script): "every Monday at 9, have finance summarise last week's invoices", "每週一早上請財務
Agent 生成週報告" → schedule_prompt's agent, text and when."""

from __future__ import annotations

import re
from typing import Any

_REPEATS = re.compile(
    r"\b(?:every|each|daily|weekdays?|weekends?|weekly|monthly)\b"
    r"|每[週周天日月晚]|每[个個]月|每[个個]?星期|工作日|平日|天天",
    re.IGNORECASE,
)
_VERBS = (
    r"生成|產生|产生|整理|做|寫|写|總結|总结|摘要|匯總|汇总|彙整|檢查|检查|查看|查|看|統計|统计|列出"
    r"|發送|发送|發|发|準備|准备|提供|報告|报告|回顧|回顾|分析|更新|提醒|給我|给我|告訴|告诉"
)
_CN_ASK = re.compile(
    r"(?:請|请|讓|让|叫)\s*(?P<agent>[^\s，,。：:]{1,12}?)\s*(?:agent|專家|专家)?\s*"
    rf"(?P<text>(?:{_VERBS}).+)",
    re.IGNORECASE,
)
_EN_ASK = re.compile(
    r"\b(?:have|ask|get|let|tell)\s+(?:the\s+)?(?P<agent>[\w-]+(?:\s+(?:agent|expert|team))?)"
    r"\s+(?:to\s+)?(?P<text>\w.+)",
    re.IGNORECASE,
)
_BY_MAIL = re.compile(
    r"\s*(?:,\s*)?\b(?:and\s+)?(?:e-?mail|mail)\s+(?:it|me|them)(?:\s+(?:to\s+me|the answers?))?\b"
    r"|\s*\bby\s+e-?mail\b|[，,]?\s*(?:並|并)?(?:用|以)?(?:寄|email|郵件|邮件)(?:給|给)?我|[，,]?\s*(?:寄|發|发)(?:到)?(?:郵件|邮件|信箱)",
    re.IGNORECASE,
)
_EDGES = " \t,.;:!?，。：；！？、\"'“”"


def schedule_prompt_args(text: str) -> dict[str, Any] | None:
    """Read who should do what on which schedule; None unless the words say all three."""
    match = _CN_ASK.search(text) or _EN_ASK.search(text)
    if match is None:
        return None
    when = (text[: match.start()] + " " + text[match.end() :]).strip(_EDGES)
    said = match.group("text").strip(_EDGES)
    mailed = _BY_MAIL.search(said)
    said = _BY_MAIL.sub("", said).strip(_EDGES)
    if not _REPEATS.search(when) or not said:
        return None
    args = {"agent": match.group("agent").strip(_EDGES), "text": said, "when": when}
    return args | ({"by_email": True} if mailed else {})
