"""Events of the human waits: to the run's chat session, and to the staff inbox groups."""

from __future__ import annotations

from django.contrib.auth.models import Group

from chat.events import INBOX_ALL, emit, emit_to_group, envelope, inbox_group
from delegation.humans.models import Audience, InboxItem
from delegation.humans.selectors import human_info, is_eval_item, item_as_data
from delegation.runs.emitter import agent_tag


def inbox_notify(item: InboxItem, type: str) -> None:
    """`inbox.new_item` / `inbox.item_decided` to the staff who may see the item (its group's
    members, or every staff member, and superusers): once per socket. An eval turn's item is
    never announced (its eval run decides it)."""
    if item.audience != Audience.STAFF or is_eval_item(item):
        return
    group_id = Group.objects.filter(name=item.group).values_list("id", flat=True).first()
    event = envelope(type, session_id=None, run_id=item.run_id, data={"item": item_as_data(item)})
    for group in {inbox_group(group_id if item.group else None), INBOX_ALL}:
        emit_to_group(group, event)


def session_notify(
    item: InboxItem,
    type: str,
) -> None:
    """`run.waiting` / `run.resumed` to the chat session of the run that asked."""
    run = item.run
    emit(
        envelope(
            type,
            session_id=run.session_id,
            run_id=run.id,
            message_id=item.message_id,
            agent=agent_tag(run),
            data={"call_id": item.tool_call_id, **human_info(item), "tool": item.tool or None},
        )
    )
