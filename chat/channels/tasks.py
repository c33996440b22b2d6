"""Background work of the channels: an inbound event's processing, an answer's delivery."""

from __future__ import annotations

import uuid

from celery import shared_task

from chat.channels.approvals import approval_post
from chat.channels.delivery import answer_notice, delivery_send
from chat.channels.gateway import inbound_process
from chat.channels.notices import notice_send
from chat.channels.progress import progress_show
from chat.channels.questions import question_send
from chat.channels.sweeper import channels_sweep


@shared_task(name="chat_channels.inbound_process")
def inbound_process_task(event_id: int) -> None:
    """Process one inbound event (again after a worker died: it starts nothing twice)."""
    inbound_process(event_id=event_id)


@shared_task(name="chat_channels.delivery_send")
def delivery_send_task(run_id: str) -> None:
    """Send one turn's answer to its channel (again after a worker died: shown once)."""
    delivery_send(run_id=uuid.UUID(run_id))


@shared_task(name="chat_channels.progress_show", ignore_result=True)
def progress_show_task(run_id: str, line: str, answer: bool = False) -> None:
    """Show an expert asked, or the answer so far, in the turn's chat (best effort, never
    after the answer)."""
    progress_show(run_id=uuid.UUID(run_id), line=line, answer=answer)


@shared_task(name="chat_channels.approval_post")
def approval_post_task(item_id: str) -> None:
    """Post a request waiting for staff to Slack's approvals channel."""
    approval_post(item_id=uuid.UUID(item_id))


@shared_task(name="chat_channels.approval_shown")
def approval_shown_task(channel: str, ts: str, text: str) -> None:
    """Replace a decided request's Slack message (its buttons gone) with who decided what."""
    from chat.channels.slack.sender import slack_replace

    slack_replace(channel, ts, text)


@shared_task(name="chat_channels.approval_note")
def approval_note_task(channel: str, user: str, text: str) -> None:
    """Tell the one who clicked why nothing was decided."""
    from chat.channels.slack.sender import slack_note

    slack_note(channel, user, text)


@shared_task(name="chat_channels.answer_notice")
def answer_notice_task(run_id: str) -> None:
    """Send a scheduled turn's answer to its user's linked accounts."""
    answer_notice(run_id=uuid.UUID(run_id))


@shared_task(name="chat_channels.question_send")
def question_send_task(item_id: str) -> None:
    """Put a waiting turn's question to its user's chat."""
    question_send(item_id=uuid.UUID(item_id))


@shared_task(name="chat_channels.notice_send")
def notice_send_task(link_id: int, text: str, key: str) -> None:
    """Send one notice (a reminder) to one linked account."""
    notice_send(link_id=link_id, text=text, key=key)


@shared_task(name="chat_channels.sweep", ignore_result=True)
def sweep_task() -> dict[str, int]:
    """Queue again what a dead worker left of the channels (Celery beat)."""
    return channels_sweep()
