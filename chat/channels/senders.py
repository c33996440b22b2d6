"""Which channel sends how: the gateway calls these by the channel's name.

A channel's sender (and its SDK) is imported when that channel first sends: every worker
imports this module, and LINE's SDK alone costs about 1.4 s of a process's start.
"""

from __future__ import annotations

import uuid
from typing import Any

from chat.channels.models import Channel


def channel_send(
    channel: str, reply: dict[str, Any], texts: list[str], *, retry_key: uuid.UUID, retry: bool
) -> None:
    """Send texts to the chat an event came from, in the channel's way."""
    if channel == Channel.LINE:
        from chat.channels.line.sender import line_send

        line_send(reply, texts, retry_key=retry_key, retry=retry)
        return
    if channel == Channel.SLACK:
        from chat.channels.slack.sender import slack_send

        slack_send(reply, texts, retry_key=retry_key, retry=retry)
        return
    raise ValueError(f"no sender for channel {channel!r}")


def channel_ask(
    channel: str, reply: dict[str, Any], question: str, choices: list[str], *, key: uuid.UUID
) -> None:
    """Put a question to the chat: LINE with its choices as quick-reply buttons, Slack with
    them listed (an answer in the thread answers it)."""
    if channel == Channel.LINE:
        from chat.channels.line.sender import line_send

        line_send(reply, [question], retry_key=key, retry=False, choices=choices)
        return
    listed = "\n".join(f"{number}. {choice}" for number, choice in enumerate(choices, 1))
    text = f"{question}\n{listed}" if listed else question
    asked = {name: value for name, value in reply.items() if name != "ts"}  # a message of its own
    channel_send(channel, asked, [text], retry_key=key, retry=False)


def channel_show_progress(
    channel: str, reply: dict[str, Any], line: str, *, answer: bool = False
) -> None:
    """Show a turn's progress: Slack's working note becomes the line (or the answer so far),
    LINE's loading animation starts again for a line (a pushed message would count against
    the bot's monthly quota, and LINE cannot edit one to show an answer growing)."""
    if channel == Channel.LINE and not answer:
        from chat.channels.line.sender import line_show_working

        line_show_working(reply)
    if channel == Channel.SLACK:
        from chat.channels.slack.sender import slack_show_progress

        slack_show_progress(reply, line, answer=answer)


def channel_show_working(channel: str, reply: dict[str, Any]) -> dict[str, Any]:
    """Show the channel's user that the agents are at work; what the reply should remember of
    it (Slack: the note to replace with the answer)."""
    if channel == Channel.LINE:
        from chat.channels.line.sender import line_show_working

        line_show_working(reply)
    if channel == Channel.SLACK:
        from chat.channels.slack.sender import slack_show_working

        return slack_show_working(reply)
    return {}
