"""Turns: a user's message starts the entry agent's run; stopping a turn stops its whole tree.

A turn parked on a person (it waits only for an approval or a staff answer) does not hold the
session: the user chats on, and it resumes by itself when the person decides.

The one place the websocket, the REST API and scheduled prompts start and stop turns. A turn can
be tried again (regenerated) or its message edited and sent again: the new turn continues the
conversation from that point, and what it replaces stays in the history as an older branch
(`ChatMessage.superseded_by`), which models no longer read.
"""

from delegation.turns.branches import turn_edit, turn_regenerate
from delegation.turns.history import branch_history
from delegation.turns.parked import SessionTurns, session_snapshot_turns, session_turns
from delegation.turns.start import ROUTING_FLAGS, SentMessage, title_from, turn_start
from delegation.turns.stop import session_delete, turn_stop

__all__ = [
    "ROUTING_FLAGS",
    "SentMessage",
    "SessionTurns",
    "branch_history",
    "session_delete",
    "session_snapshot_turns",
    "session_turns",
    "title_from",
    "turn_edit",
    "turn_regenerate",
    "turn_start",
    "turn_stop",
]
