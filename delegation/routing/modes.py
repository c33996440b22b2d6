"""What each mode asks of the agents answering a turn (added to their system prompts)."""

from __future__ import annotations

from delegation.routing.models import Mode

MODE_RULES = {
    Mode.GUIDE: (
        "This turn is in GUIDE mode: orient the user and recommend where to start. You may ask "
        "one short question about their preference. Use knowledge for overviews when you have "
        "it. End with 2–3 suggested next questions, each on its own line starting with '→ '."
    ),
    Mode.CHAT: (
        "This turn is in CHAT mode: explain and compare clearly. When you have knowledge tools, "
        "search first (top_k {top_k}) and take the main facts from the passages, cited."
    ),
    Mode.STRICT: (
        "This turn is in STRICT mode (audit-grade): cite every factual sentence; if the "
        "knowledge is insufficient, refuse, say what is missing and the shortest way to add it."
    ),
}


def mode_rule(mode: str | None, *, top_k: int = 3) -> str:
    """The prompt rule of a mode ("" before routing)."""
    return MODE_RULES.get(mode, "").format(top_k=top_k) if mode else ""
