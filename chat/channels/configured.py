"""Which channels are switched on (their secrets are set in the environment) and what one
message of each may hold; no channel SDK is imported here, so admin and workers start fast."""

from __future__ import annotations

from django.conf import settings

from chat.channels.models import Channel

# Characters in one text message: LINE's limit; Slack shows up to 4,000 before cutting.
TEXT_LIMITS: dict[str, int] = {Channel.LINE: 5000, Channel.SLACK: 3900}


def line_configured() -> bool:
    """Whether LINE is switched on (its secret and access token are set)."""
    return bool(settings.LINE_CHANNEL_SECRET and settings.LINE_CHANNEL_ACCESS_TOKEN)


def slack_configured() -> bool:
    """Whether Slack is switched on (its signing secret and bot token are set)."""
    return bool(settings.SLACK_SIGNING_SECRET and settings.SLACK_BOT_TOKEN)
