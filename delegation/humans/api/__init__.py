"""REST endpoints of humans in the loop: the inbox and its decisions, the review queue, the
activity log (and its CSV export), agent states."""

from delegation.humans.api.activity import ActivityExportView, ActivityListView, AgentStateListView
from delegation.humans.api.inbox import (
    InboxCancelView,
    InboxDecisionView,
    InboxDetailView,
    InboxListView,
)
from delegation.humans.api.reviews import ReviewDecisionView, ReviewDetailView, ReviewListView

__all__ = [
    "ActivityExportView",
    "ActivityListView",
    "AgentStateListView",
    "InboxCancelView",
    "InboxDecisionView",
    "InboxDetailView",
    "InboxListView",
    "ReviewDecisionView",
    "ReviewDetailView",
    "ReviewListView",
]
