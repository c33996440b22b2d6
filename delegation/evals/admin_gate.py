"""Admin of the publish gate: held drafts (the change, each gated suite's run, publish anyway,
edit, discard) and the record of gated publishes."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext

from config.errors import AppError
from delegation.evals.admin_pages import REFRESH_SECONDS, page_context
from delegation.evals.forms import PublishAnywayForm
from delegation.evals.gate import draft_discard, draft_publish, draft_summary
from delegation.evals.models import AgentDraft, DraftStatus, PublishRecord
from delegation.evals.selectors import draft_diff, result_rows, run_progress
from delegation.evals.services import eval_run_kick


@admin.register(AgentDraft)
class AgentDraftAdmin(admin.ModelAdmin):
    """Saves the publish gate held: what changed, how the suites did, and the decision."""

    list_display = ["agent", "base_version", "status", "created_by", "created_at", "decided_by"]
    list_filter = ["status", "agent"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Drafts come from saving a gated agent."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Decided with the buttons of its page, never edited."""
        return False

    def get_urls(self) -> list[Any]:
        """Adds publish-anyway and discard."""
        view = self.admin_site.admin_view
        extra = [
            path("<int:draft_id>/publish/", view(self.publish_view), name="evals_draft_publish"),
            path("<int:draft_id>/discard/", view(self.discard_view), name="evals_draft_discard"),
        ]
        return extra + super().get_urls()

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """The gate's page: the change, each suite's run (progress, failing cases), the
        buttons."""
        draft = self.get_object(request, object_id)
        if draft is None or not self.has_view_permission(request, draft):
            return HttpResponseRedirect(reverse("admin:evals_agentdraft_changelist"))
        runs = list(draft.eval_runs.select_related("suite").order_by("suite__name"))
        for run in runs:
            eval_run_kick(run=run)
        context = page_context(
            self,
            request,
            gettext("Draft of %(agent)s (from v%(version)s)")
            % {"agent": draft.agent, "version": draft.base_version},
            draft=draft,
            diff=draft_diff(draft=draft),
            summary=draft_summary(draft=draft),
            runs=[
                {"run": r, "progress": run_progress(run=r), "rows": result_rows(run=r)}
                for r in runs
            ],
            refresh=REFRESH_SECONDS if draft.status == DraftStatus.EVALUATING else None,
            can_decide=_may_publish(request)
            and draft.status in (DraftStatus.EVALUATING, DraftStatus.HELD),
            form=PublishAnywayForm(),
            record=PublishRecord.objects.filter(draft=draft).first(),
        )
        return TemplateResponse(request, "admin/evals/agentdraft/gate.html", context)

    def publish_view(self, request: HttpRequest, draft_id: int) -> HttpResponse:
        """POST: publish the draft anyway (recorded with who, why, and the eval result)."""
        draft = get_object_or_404(AgentDraft, pk=draft_id)
        back = reverse("admin:evals_agentdraft_change", args=[draft.pk])
        if request.method != "POST" or not _may_publish(request):
            return HttpResponseRedirect(back)
        form = PublishAnywayForm(request.POST)
        if not form.is_valid():
            messages.error(request, gettext("The reason is too long."))
            return HttpResponseRedirect(back)
        try:
            record = draft_publish(
                draft=draft, user=request.user, override=True, reason=form.cleaned_data["reason"]
            )
        except (AppError, ValidationError) as exc:
            reason = getattr(exc, "message", exc)
            messages.error(request, gettext("Not published: %(reason)s") % {"reason": reason})
            return HttpResponseRedirect(back)
        version = record.revision.version
        messages.success(
            request, gettext("Published as version %(version)s.") % {"version": version}
        )
        return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[draft.agent_id]))

    def discard_view(self, request: HttpRequest, draft_id: int) -> HttpResponse:
        """POST: drop the draft; the live agent stays as it is."""
        draft = get_object_or_404(AgentDraft, pk=draft_id)
        if request.method == "POST" and _may_publish(request):
            try:
                draft_discard(draft=draft, user=request.user)
                messages.success(request, gettext("The draft was discarded."))
            except AppError as exc:
                messages.error(request, exc.message)
        return HttpResponseRedirect(reverse("admin:evals_agentdraft_change", args=[draft.pk]))


def _may_publish(request: HttpRequest) -> bool:
    return request.user.has_perm("agents.change_agent")


@admin.register(PublishRecord)
class PublishRecordAdmin(admin.ModelAdmin):
    """Every gated publish: passed, or published anyway by whom and why."""

    list_display = ["revision", "passed", "override", "override_reason", "created_at"]
    list_filter = ["passed", "override"]
    readonly_fields = ["revision", "draft", "passed", "override", "override_reason", "result"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Made by publishing."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """History: never edited."""
        return False
