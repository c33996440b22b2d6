"""Admin of humans in the loop: the inbox (decided in /inbox/), the review queue (decided
here), validation verdicts and the activity log, filterable; each scoped to the staff member
as the API is (groups; the activity log also by users' own questions and knowledge)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from config.errors import AppError
from delegation.humans.models import Activity, InboxItem, Review, ReviewStatus, Verdict
from delegation.humans.reviews import review_decide
from delegation.humans.selectors import activity_for, inbox_items_for, reviews_for
from delegation.selectors import run_tree


class ReadOnly(admin.ModelAdmin):
    """Records of what happened: browsable, never edited or added here."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Rows are written by the platform."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never edited (decisions go through the inbox and the API)."""
        return False


@admin.register(InboxItem)
class InboxItemAdmin(ReadOnly):
    """Questions and tool approvals; decide them on the live inbox page (/inbox/)."""

    list_display = ["what", "kind", "agent_display_name", "user", "status", "group", "deadline"]
    list_filter = ["status", "kind", "audience", "urgency", "group", "agent_name"]
    search_fields = ["question", "tool", "agent_name", "user__username"]
    readonly_fields = [f.name for f in InboxItem._meta.fields] + ["decide_link"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[InboxItem]:
        """Only the items this staff member may see (their groups', or all for superusers)."""
        return inbox_items_for(user=request.user)

    @admin.display(description=_("question or tool call"))
    def what(self, obj: InboxItem) -> str:
        """The question, or the tool with its arguments."""
        if obj.tool:
            return f"{obj.tool}({json.dumps(obj.arguments, ensure_ascii=False)[:80]})"
        return obj.question[:100]

    @admin.display(description=_("decide"))
    def decide_link(self, obj: InboxItem) -> str:
        """Where to decide it."""
        if not obj.is_pending:
            return gettext("Decided.")
        return format_html('<a href="{}">{}</a>', reverse("chat:inbox"), gettext("Open the inbox"))


class ReviewForm(forms.ModelForm):
    """A reviewer's mark: correct, wrong (with a note) or fixed (with the corrected answer)."""

    status = forms.ChoiceField(label=_("status"), choices=ReviewStatus.choices)

    class Meta:
        model = Review
        fields = ["status", "note", "corrected_answer"]


@admin.register(Review)
class ReviewAdmin(admin.ModelAdmin):
    """The review queue: flagged answers with the question, the tree, the issue and citations."""

    form = ReviewForm
    list_display = ["question_short", "agent_name", "status", "user", "reviewed_by", "created_at"]
    list_filter = ["status", "agent_name", "group"]
    search_fields = ["question", "answer", "issue", "user__username"]
    readonly_fields = [
        "question",
        "answer",
        "issue",
        "citation_list",
        "tree",
        "agent_name",
        "user",
        "session",
        "reviewed_by",
        "reviewed_at",
        "created_at",
    ]
    fieldsets = [
        (None, {"fields": ["question", "answer", "issue", "citation_list", "tree"]}),
        (_("Who"), {"fields": ["agent_name", "user", "session", "created_at"]}),
        (
            _("Review"),
            {
                "fields": ["status", "note", "corrected_answer", "reviewed_by", "reviewed_at"],
                "description": _(
                    "Wrong needs a note; fixed needs the corrected answer, which is sent to the "
                    "user's chat as a follow-up from “Reviewer”. The first review wins."
                ),
            },
        ),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Review]:
        """Only the reviews this staff member may see."""
        return reviews_for(user=request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Reviews are queued by the platform."""
        return False

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        """A decided review is read-only."""
        if obj is not None and obj.status != ReviewStatus.PENDING:
            return [*self.readonly_fields, "status", "note", "corrected_answer"]
        return list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: Review, form: Any, change: bool) -> None:
        """Decide through review_decide (the follow-up message, the first-wins rule)."""
        if form.cleaned_data["status"] == ReviewStatus.PENDING:
            return
        try:
            review_decide(
                review=Review.objects.get(pk=obj.pk),
                user=request.user,
                status=form.cleaned_data["status"],
                note=form.cleaned_data.get("note") or "",
                corrected_answer=form.cleaned_data.get("corrected_answer") or "",
            )
        except AppError as exc:
            messages.error(request, exc.message)

    @admin.display(description=_("question"))
    def question_short(self, obj: Review) -> str:
        """The user's question, shortened."""
        return obj.question[:100]

    @admin.display(description=_("citations"))
    def citation_list(self, obj: Review) -> str:
        """The knowledge the answer cited."""
        if not obj.citations:
            return "—"
        return format_html_join(
            "", "<p>[{}] {}: “{}”</p>", ((c["ref"], c["title"], c["quote"]) for c in obj.citations)
        )

    @admin.display(description=_("tree"))
    def tree(self, obj: Review) -> str:
        """Each run of the turn with its answer and the check of it."""
        rows = []
        for run in run_tree(run=obj.run):
            check = run.validation or {}
            verdict = ""
            if check:
                verdict = (
                    gettext("valid")
                    if check.get("valid")
                    else gettext("invalid: %(issue)s") % {"issue": check.get("issue")}
                )
                verdict = f" [{verdict}; {check.get('outcome', '')}]"
            rows.append(
                (
                    run.depth * 1.5,
                    run.agent_config["display_name"],
                    run.get_status_display(),
                    verdict,
                    (run.answer or "")[:300],
                )
            )
        return format_html_join("", '<p style="margin-left:{}em"><b>{}</b> ({}){}: {}</p>', rows)


@admin.register(Verdict)
class VerdictAdmin(ReadOnly):
    """Every validator verdict, filterable by agent, validity and outcome."""

    list_display = ["agent_name", "valid", "mode", "confidence", "outcome", "issue", "created_at"]
    list_filter = ["valid", "mode", "validator_failed", "outcome", "agent_name"]
    search_fields = ["issue", "agent_name"]
    readonly_fields = [f.name for f in Verdict._meta.fields]


@admin.action(description=_("Export the selected rows as CSV"))
def export_csv(modeladmin: Any, request: HttpRequest, queryset: QuerySet[Activity]) -> HttpResponse:
    """The rows as the API's export has them."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["created_at", "kind", "agent_name", "run_id", "user", "actor", "summary"])
    for row in queryset.order_by("created_at"):
        summary = f"'{row.summary}" if row.summary[:1] in "=+-@" else row.summary
        writer.writerow(
            [
                row.created_at.isoformat(),
                row.kind,
                row.agent_name,
                row.run_id or "",
                row.user.username if row.user_id else "",
                row.actor.username if row.actor_id else "",
                summary,
            ]
        )
    response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="activity.csv"'
    return response


@admin.register(Activity)
class ActivityAdmin(ReadOnly):
    """One row per notable event, filterable by kind, agent and date; exportable."""

    list_display = ["created_at", "kind", "agent_name", "summary", "user", "actor"]
    list_filter = ["kind", "agent_name", "created_at"]
    search_fields = ["summary", "agent_name", "user__username"]
    date_hierarchy = "created_at"
    readonly_fields = [f.name for f in Activity._meta.fields]
    actions = [export_csv]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Activity]:
        """Only the rows this staff member may see (as the API's), with who, in one query."""
        return activity_for(user=request.user)
