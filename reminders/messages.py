"""The chat messages of a batch of reminders, written into chat history in one statement."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection

from chat.models import ChatMessage


@dataclass(frozen=True, slots=True)
class ReminderMessage:
    """A reminder's chat message: the columns of its own. The rest (role, status, the agent tag
    in its language, ...) it shares with the batch's messages in that language."""

    id: uuid.UUID
    session_id: uuid.UUID
    content: str
    created_at: datetime
    language: str

    @property
    def updated_at(self) -> datetime:
        """A new message was last changed when it was written."""
        return self.created_at


OWN = ("id", "session_id", "content", "created_at", "updated_at")  # ChatMessage attnames


def messages_insert(messages: list[ReminderMessage], shared: dict[str, ChatMessage]) -> None:
    """Insert the messages, each with the columns `shared[its language]` has (an unsaved
    message); one already there (a repeated delivery) is left as it is."""
    if connection.vendor != "postgresql":
        ChatMessage.objects.bulk_create(
            [_unsaved(m, shared[m.language]) for m in messages], ignore_conflicts=True
        )
        return
    for language, row in shared.items():
        _insert_postgres([m for m in messages if m.language == language], row)


def _unsaved(message: ReminderMessage, shared: ChatMessage) -> ChatMessage:
    values = {f.attname: getattr(shared, f.attname) for f in ChatMessage._meta.concrete_fields}
    return ChatMessage(**values | {name: getattr(message, name) for name in OWN})


def _insert_postgres(messages: list[ReminderMessage], shared: ChatMessage) -> None:
    """One INSERT … SELECT FROM unnest(an array per column of their own, bound binary), the
    shared values bound once. bulk_create binds every column of every row as text (sixteen
    arrays, four of JSON the server parses element by element): five times the cost per
    message, most of the dispatcher's time."""
    fields = ChatMessage._meta.concrete_fields
    own = [f for f in fields if f.attname in OWN]
    quote = connection.ops.quote_name
    values = [
        f"m.{quote(f.column)}" if f in own else f"%s::{f.db_type(connection)}" for f in fields
    ]
    sql = (
        f"INSERT INTO {quote(ChatMessage._meta.db_table)} "
        f"({', '.join(quote(f.column) for f in fields)}) SELECT {', '.join(values)} "
        f"FROM unnest({', '.join(f'%b::{f.db_type(connection)}[]' for f in own)}) "
        f"AS m({', '.join(quote(f.column) for f in own)}) ON CONFLICT DO NOTHING"
    )
    params: list[Any] = [
        f.get_db_prep_save(getattr(shared, f.attname), connection) for f in fields if f not in own
    ]
    params += [[getattr(m, f.attname) for m in messages] for f in own]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
