"""Routes of the REST API, version 1."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from agents.api import AgentDetailView, AgentListView, AvailableAgentsView, ToolListView
from agents.knowledge.api import (
    DocumentDetailView,
    DocumentListView,
    KnowledgeBaseDetailView,
    KnowledgeBaseListView,
)
from agents.mcp.api import (
    McpConnectionDetailView,
    McpConnectionListView,
    McpServerDetailView,
    McpServerListView,
    McpServerSyncsView,
    McpServerSyncView,
    McpServerToolsView,
    McpSyncAcceptView,
    McpSyncDismissView,
)
from chat.api import (
    MessageListView,
    SessionDetailView,
    SessionListView,
    TokenDetailView,
    TokenListView,
)
from chat.api_actions import (
    EditView,
    FeedbackView,
    RegenerateView,
    SessionFeedbackView,
    SessionSearchView,
)
from chat.sse import run_events, session_events
from delegation.api import RunCancelView, RunDetailView
from delegation.evals.api import (
    DraftDetailView,
    DraftDiscardView,
    DraftPublishView,
    EvalCaseDetailView,
    EvalCaseListView,
    EvalRunCancelView,
    EvalRunDetailView,
    EvalRunListView,
    EvalSuiteDetailView,
    EvalSuiteListView,
)
from delegation.humans.api import (
    ActivityExportView,
    ActivityListView,
    AgentStateListView,
    InboxCancelView,
    InboxDecisionView,
    InboxDetailView,
    InboxListView,
    ReviewDecisionView,
    ReviewDetailView,
    ReviewListView,
)
from delegation.routing.api import RoutingStatsView, SessionMemoryView
from delegation.usage.api import CostlyTurnsView, MyUsageView, UsageReportView

urlpatterns = [
    path("", include("reminders.api_urls")),
    path("", include("reminders.watches.api_urls")),
    path("agents/", AgentListView.as_view(), name="agent-list"),
    path("agents/available/", AvailableAgentsView.as_view(), name="agent-available"),
    path("agents/<slug:name>/", AgentDetailView.as_view(), name="agent-detail"),
    path("tools/", ToolListView.as_view(), name="tool-list"),
    path("mcp-servers/", McpServerListView.as_view(), name="mcp-server-list"),
    path("mcp-connections/", McpConnectionListView.as_view(), name="mcp-connection-list"),
    path(
        "mcp-connections/<slug:name>/",
        McpConnectionDetailView.as_view(),
        name="mcp-connection-detail",
    ),
    path("mcp-servers/<slug:name>/", McpServerDetailView.as_view(), name="mcp-server-detail"),
    path("mcp-servers/<slug:name>/sync/", McpServerSyncView.as_view(), name="mcp-server-sync"),
    path("mcp-servers/<slug:name>/tools/", McpServerToolsView.as_view(), name="mcp-server-tools"),
    path("mcp-servers/<slug:name>/syncs/", McpServerSyncsView.as_view(), name="mcp-server-syncs"),
    path(
        "mcp-servers/<slug:name>/syncs/<int:sync_id>/accept/",
        McpSyncAcceptView.as_view(),
        name="mcp-sync-accept",
    ),
    path(
        "mcp-servers/<slug:name>/syncs/<int:sync_id>/dismiss/",
        McpSyncDismissView.as_view(),
        name="mcp-sync-dismiss",
    ),
    path("knowledge-bases/", KnowledgeBaseListView.as_view(), name="kb-list"),
    path("knowledge-bases/<int:kb_id>/", KnowledgeBaseDetailView.as_view(), name="kb-detail"),
    path("knowledge-bases/<int:kb_id>/documents/", DocumentListView.as_view(), name="kb-documents"),
    path(
        "knowledge-bases/<int:kb_id>/documents/<int:document_id>/",
        DocumentDetailView.as_view(),
        name="kb-document",
    ),
    path("sessions/", SessionListView.as_view(), name="session-list"),
    path("sessions/<uuid:session_id>/", SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<uuid:session_id>/memory/", SessionMemoryView.as_view(), name="session-memory"),
    path("sessions/<uuid:session_id>/messages/", MessageListView.as_view(), name="message-list"),
    path("sessions/search/", SessionSearchView.as_view(), name="session-search"),
    path(
        "sessions/<uuid:session_id>/feedback/",
        SessionFeedbackView.as_view(),
        name="session-feedback",
    ),
    path(
        "sessions/<uuid:session_id>/messages/<uuid:message_id>/regenerate/",
        RegenerateView.as_view(),
        name="message-regenerate",
    ),
    path(
        "sessions/<uuid:session_id>/messages/<uuid:message_id>/edit/",
        EditView.as_view(),
        name="message-edit",
    ),
    path(
        "sessions/<uuid:session_id>/messages/<uuid:message_id>/feedback/",
        FeedbackView.as_view(),
        name="message-feedback",
    ),
    path("sessions/<uuid:session_id>/events/", session_events, name="session-events"),
    path("runs/<uuid:run_id>/", RunDetailView.as_view(), name="run-detail"),
    path("runs/<uuid:run_id>/cancel/", RunCancelView.as_view(), name="run-cancel"),
    path("runs/<uuid:run_id>/events/", run_events, name="run-events"),
    path("inbox/", InboxListView.as_view(), name="inbox-list"),
    path("inbox/<uuid:item_id>/", InboxDetailView.as_view(), name="inbox-detail"),
    path("inbox/<uuid:item_id>/decision/", InboxDecisionView.as_view(), name="inbox-decision"),
    path("inbox/<uuid:item_id>/cancel/", InboxCancelView.as_view(), name="inbox-cancel"),
    path("reviews/", ReviewListView.as_view(), name="review-list"),
    path("reviews/<uuid:review_id>/", ReviewDetailView.as_view(), name="review-detail"),
    path(
        "reviews/<uuid:review_id>/decision/", ReviewDecisionView.as_view(), name="review-decision"
    ),
    path("activity/", ActivityListView.as_view(), name="activity-list"),
    path("activity/export/", ActivityExportView.as_view(), name="activity-export"),
    path("agent-states/", AgentStateListView.as_view(), name="agent-states"),
    path("tokens/", TokenListView.as_view(), name="token-list"),
    path("routing/stats/", RoutingStatsView.as_view(), name="routing-stats"),
    path("usage/", UsageReportView.as_view(), name="usage-report"),
    path("usage/mine/", MyUsageView.as_view(), name="usage-mine"),
    path("usage/turns/", CostlyTurnsView.as_view(), name="usage-turns"),
    path("tokens/<int:token_id>/", TokenDetailView.as_view(), name="token-detail"),
    path("evals/suites/", EvalSuiteListView.as_view(), name="eval-suite-list"),
    path("evals/suites/<int:suite_id>/", EvalSuiteDetailView.as_view(), name="eval-suite-detail"),
    path("evals/suites/<int:suite_id>/cases/", EvalCaseListView.as_view(), name="eval-case-list"),
    path("evals/suites/<int:suite_id>/runs/", EvalRunListView.as_view(), name="eval-run-list"),
    path("evals/cases/<int:case_id>/", EvalCaseDetailView.as_view(), name="eval-case-detail"),
    path("evals/runs/<uuid:eval_run_id>/", EvalRunDetailView.as_view(), name="eval-run-detail"),
    path(
        "evals/runs/<uuid:eval_run_id>/cancel/", EvalRunCancelView.as_view(), name="eval-run-cancel"
    ),
    path("evals/drafts/<int:draft_id>/", DraftDetailView.as_view(), name="eval-draft-detail"),
    path(
        "evals/drafts/<int:draft_id>/publish/",
        DraftPublishView.as_view(),
        name="eval-draft-publish",
    ),
    path(
        "evals/drafts/<int:draft_id>/discard/",
        DraftDiscardView.as_view(),
        name="eval-draft-discard",
    ),
]


@csrf_exempt  # it changes nothing; without this an unknown POST gets Django's HTML CSRF page
def api_not_found(request: HttpRequest, rest: str = "") -> JsonResponse:
    """Unknown API paths (or malformed ids in them) answer 404 in the API's error shape."""
    return JsonResponse(
        {"error": {"code": "not_found", "message": "No such API path."}}, status=404
    )


urlpatterns.append(re_path(r"^(?P<rest>[\s\S]*)$", api_not_found))  # any path, newlines too
