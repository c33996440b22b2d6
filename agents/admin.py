"""Admin for agents: edit with validation, every save a revision, diff and restore revisions."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join

from agents.forms import STALE_LABEL, AgentForm, tool_choices
from agents.map import agent_map, agent_map_warnings
from agents.map_svg import map_svg
from agents.models import AGENT_EDITABLE_FIELDS, Agent, AgentRevision, AnswerValidation
from agents.revision_fields import revision_field_diff
from agents.selectors import agent_revisions, revision_diff
from agents.services import PublishHeld, agent_revision_restore, agent_save
from agents.validation import stale_tool_keys
from delegation.evals.admin import run_link
from delegation.evals.gate import draft_apply, suites_covering
from delegation.evals.models import AgentDraft, DraftStatus, PublishRecord
from delegation.humans.states import (
    agent_annotations,
    annotated_quality,
    annotated_state,
    quality_text,
    state_text,
)

HELD = "_publish_held"  # the request attribute holding a save the publish gate held


class AgentAdminForm(AgentForm):
    """The agent form, with the quality gate's and the human waits' settings as widgets."""

    approval_tool_keys = forms.MultipleChoiceField(
        choices=tool_choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        label="Tools needing approval",
        help_text="With “needs human approval” on: these tools wait for staff approval. "
        "None ticked: every tool of this agent that changes data.",
    )
    fallback_chain = forms.CharField(
        required=False,
        help_text="Comma-separated, in order: retry, next_expert, then low_confidence or "
        "unanswered (which end the chain). Blank: invalid answers go on marked low confidence.",
    )
    validate_answers = forms.ChoiceField(
        choices=AnswerValidation.choices,
        required=False,
        help_text="Check this agent's answers before its caller gets them.",
    )
    answer_min_chars = forms.IntegerField(
        min_value=0, required=False, help_text="Rules: shortest valid answer (0: no bound)."
    )
    answer_max_chars = forms.IntegerField(
        min_value=0, required=False, help_text="Rules: longest valid answer (0: no bound)."
    )
    human_group = forms.ChoiceField(
        required=False,
        label="Assignment group",
        help_text="The staff group that sees this agent's questions, approvals and reviews "
        "(blank: every staff member).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["human_group"].choices = [("", "—"), *((n, n) for n in _group_names())]
        if "fallback_chain" not in self.data:
            self.initial["fallback_chain"] = ", ".join(
                self.initial.get("fallback_chain") or self.instance.fallback_chain or []
            )

    def clean_fallback_chain(self) -> list[str]:
        """The chain as a list of steps (the model validates them); a form posted without the
        field keeps the agent's chain."""
        if "fallback_chain" not in self.data:
            return list(self.instance.fallback_chain or [])
        text = self.cleaned_data.get("fallback_chain") or ""
        return [step.strip() for step in text.split(",") if step.strip()]

    def clean_validate_answers(self) -> str:
        """Off unless chosen."""
        return self.cleaned_data.get("validate_answers") or AnswerValidation.OFF

    def clean_answer_min_chars(self) -> int:
        """0 (no bound) unless given."""
        return self.cleaned_data.get("answer_min_chars") or 0

    def clean_answer_max_chars(self) -> int:
        """0 (no bound) unless given."""
        return self.cleaned_data.get("answer_max_chars") or 0


def _group_names() -> list[str]:
    return list(Group.objects.order_by("name").values_list("name", flat=True))


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin):
    """Agents with versioned revisions, live state and answer quality."""

    form = AgentAdminForm
    list_display = [
        "name",
        "display_name",
        "is_entry",
        "enabled",
        "delegatable",
        "provider",
        "model",
        "version",
        "live_state",
        "quality",
        "updated_at",
    ]
    list_filter = ["enabled", "delegatable", "is_entry", "provider", "validate_answers"]
    search_fields = ["name", "display_name", "description"]
    filter_horizontal = ["allowed_subagents"]
    readonly_fields = ["version", "revisions_link", "knowledge_links", "eval_suites"]
    fieldsets = [
        (None, {"fields": ["name", "display_name", "description", "tags", "system_prompt"]}),
        (
            "Model",
            {
                "fields": [
                    "provider",
                    "model",
                    "base_url",
                    "api_key_env",
                    "temperature",
                    "max_tokens",
                ]
            },
        ),
        (
            "Tools and delegation",
            {
                "fields": [
                    "tool_keys",
                    "knowledge_links",
                    "answer_from_knowledge_only",
                    "allowed_subagents",
                    "max_depth",
                    "max_steps",
                    "turn_max_cost",
                ]
            },
        ),
        (
            "Answer quality",
            {
                "fields": [
                    "validate_answers",
                    "validator_model",
                    "answer_min_chars",
                    "answer_max_chars",
                    "fallback_chain",
                ]
            },
        ),
        (
            "Humans in the loop",
            {
                "fields": [
                    "require_approval",
                    "approval_tool_keys",
                    "human_sla_seconds",
                    "human_group",
                ]
            },
        ),
        (
            "Availability",
            {"fields": ["enabled", "delegatable", "is_entry", "access_group", "access_permission"]},
        ),
        ("History", {"fields": ["version", "revisions_link", "eval_suites"]}),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        """With each agent's live state and quality counts (delegation.humans.states)."""
        return super().get_queryset(request).annotate(**agent_annotations())

    @admin.display(description="state")
    def live_state(self, obj: Agent) -> str:
        """idle, working n, waiting for experts n, waiting for a human n (oldest wait)."""
        return state_text(annotated_state(obj))

    @admin.display(description="quality")
    def quality(self, obj: Agent) -> str:
        """Verdicts on its answers and reviews of them."""
        return quality_text(annotated_quality(obj))

    @admin.display(description="Knowledge bases")
    def knowledge_links(self, obj: Agent) -> str:
        """The knowledge bases linked to the agent (each gives it kb_search and kb_documents),
        each linked to its page, where agents are added and removed."""
        add = reverse("admin:knowledge_knowledgebase_changelist")
        if not obj.pk or not obj.knowledge_bases.exists():
            return format_html(
                'None. Link one on its <a href="{}">knowledge base page</a> to give this agent '
                "the kb_search and kb_documents tools.",
                add,
            )
        links = format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            (
                (reverse("admin:knowledge_knowledgebase_change", args=[kb.pk]), kb.display_name)
                for kb in obj.knowledge_bases.all()
            ),
        )
        return format_html("{} (kb_search and kb_documents are offered)", links)

    @admin.display(description="eval suites")
    def eval_suites(self, obj: Agent) -> str:
        """The suites that talk to or gate this agent, with their last result."""
        suites = suites_covering(agent=obj) if obj.pk else []
        if not suites:
            return "None: add one under Evals → Eval suites to test this agent's edits."
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>{} ({})',
            (
                (
                    reverse("admin:evals_evalsuite_change", args=[s.pk]),
                    s.name,
                    " · gates saves" if s.publish_gate else "",
                    run_link(s.runs.order_by("-created_at").first()),
                )
                for s in suites
            ),
        )

    @admin.display(description="Revisions")
    def revisions_link(self, obj: Agent) -> str:
        """A link to the revision list (diff and restore)."""
        if not obj.pk:
            return "Saved versions appear here."
        url = reverse("admin:agents_agent_revisions", args=[obj.pk])
        return format_html(
            '<a href="{}">{} revision(s): diff and restore</a>', url, obj.revisions.count()
        )

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Warns, when the page is shown, about tool keys removed from the code."""
        agent = Agent.objects.filter(pk=object_id).first() if object_id.isdigit() else None
        stale = stale_tool_keys(agent.tool_keys) if agent is not None else []
        if stale and request.method == "GET":
            messages.warning(
                request,
                f"This agent lists tools {STALE_LABEL}: {', '.join(stale)}. They are skipped "
                "at run time and shown unticked under Tools: saving removes them unless you "
                "tick them.",
            )
        warnings = agent_map_warnings(agent=agent) if agent is not None else []
        extra_context = {**(extra_context or {}), "map_warnings": warnings}
        return super().change_view(request, object_id, form_url, extra_context)

    def response_add(
        self, request: HttpRequest, obj: Agent, post_url_continue: str | None = None
    ) -> HttpResponse:
        """After adding an agent, offers (one click) to make it one of the entry agent's experts."""
        entry = Agent.objects.filter(is_entry=True).first()
        offer = (
            entry is not None
            and entry.pk != obj.pk
            and not entry.allowed_subagents.filter(pk=obj.pk).exists()
            and self.has_change_permission(request, entry)
        )
        if offer:
            url = reverse("admin:agents_agent_add_expert", args=[entry.pk, obj.pk])
            messages.info(
                request,
                format_html(
                    "{} is not one of {}'s experts yet, so users cannot reach it. "
                    '<form method="post" action="{}" style="display:inline">'
                    '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
                    '<button type="submit" class="button">Add it to {}\'s experts</button>'
                    "</form>",
                    obj,
                    entry,
                    url,
                    get_token(request),
                    entry,
                ),
            )
        return super().response_add(request, obj, post_url_continue)

    def add_expert_view(self, request: HttpRequest, agent_id: int, expert_id: int) -> HttpResponse:
        """POST: add `expert` to the agent's experts (a new revision records it)."""
        agent = get_object_or_404(Agent, pk=agent_id)
        expert = get_object_or_404(Agent, pk=expert_id)
        if request.method != "POST" or not self.has_change_permission(request, agent):
            return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[expert_id]))
        subagents = [*agent.allowed_subagents.all(), expert]
        try:
            agent_save(
                agent=agent,
                data={"allowed_subagents": subagents},
                user=request.user,
                comment=f"Admin: added expert {expert.name}",
            )
        except PublishHeld as held:
            messages.warning(request, held.message)
            return HttpResponseRedirect(_draft_url(held))
        except ValidationError as exc:
            messages.error(request, f"{expert} was not added: {' '.join(exc.messages)}")
            return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[expert_id]))
        messages.success(request, f"{expert} is now one of {agent}'s experts.")
        return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[expert_id]))

    def map_view(self, request: HttpRequest) -> HttpResponse:
        """The delegation map: who may delegate to whom, as an SVG, with its warnings."""
        if not self.has_view_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        dmap = agent_map()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Delegation map",
            "map": dmap,
            "svg": map_svg(dmap),
            "nodes": sorted(dmap.nodes.values(), key=lambda n: (n.layer is None, n.layer, n.name)),
        }
        return TemplateResponse(request, "admin/agents/agent/map.html", context)

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Any:
        """The agent; on GET with ?draft=<id>, with that held draft's values (to fix it)."""
        agent = super().get_object(request, object_id, from_field)
        draft_id = request.GET.get("draft", "")
        if agent is None or request.method != "GET" or not draft_id.isdigit():
            return agent
        draft = AgentDraft.objects.filter(pk=draft_id, agent=agent).first()
        if draft is None or draft.status not in (DraftStatus.EVALUATING, DraftStatus.HELD):
            return agent
        messages.info(
            request,
            f"Editing the held draft (from v{draft.base_version}): saving "
            "runs its eval suites again.",
        )
        return draft_apply(agent=agent, draft=draft)

    def save_model(self, request: HttpRequest, obj: Agent, form: Any, change: bool) -> None:
        """Save through agent_save: entry flag, sub-agents, version and revision, all or
        nothing; a save a publish gate holds is kept as a draft (shown next)."""
        data = {f: form.cleaned_data[f] for f in AGENT_EDITABLE_FIELDS if f in form.cleaned_data}
        changed = ", ".join(form.changed_data) if change else "created"
        try:
            agent_save(agent=obj, data=data, user=request.user, comment=f"Admin: {changed}")
        except PublishHeld as held:
            setattr(request, HELD, held)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        """Sub-agents were saved with the agent by agent_save; only inline formsets are left."""
        if hasattr(request, HELD):
            return
        for formset in formsets:
            self.save_formset(request, form, formset, change=change)

    def log_change(self, request: HttpRequest, obj: Any, message: Any) -> Any:
        """A held save changed nothing yet: no history entry."""
        if not hasattr(request, HELD):
            return super().log_change(request, obj, message)
        return None

    def response_change(self, request: HttpRequest, obj: Agent) -> HttpResponse:
        """A held save goes to its draft's page (the suites' progress, then the decision)."""
        held = getattr(request, HELD, None)
        if held is None:
            return super().response_change(request, obj)
        messages.warning(request, held.message)
        return HttpResponseRedirect(_draft_url(held))

    def get_urls(self) -> list[Any]:
        """Adds the revisions page and the restore action."""
        extra = [
            path("map/", self.admin_site.admin_view(self.map_view), name="agents_agent_map"),
            path(
                "<int:agent_id>/add-expert/<int:expert_id>/",
                self.admin_site.admin_view(self.add_expert_view),
                name="agents_agent_add_expert",
            ),
            path(
                "<int:agent_id>/revisions/",
                self.admin_site.admin_view(self.revisions_view),
                name="agents_agent_revisions",
            ),
            path(
                "<int:agent_id>/revisions/<int:version>/restore/",
                self.admin_site.admin_view(self.restore_view),
                name="agents_agent_restore",
            ),
        ]
        return extra + super().get_urls()

    def revisions_view(self, request: HttpRequest, agent_id: int) -> HttpResponse:
        """Each revision with its diff against the one before."""
        agent = get_object_or_404(Agent, pk=agent_id)
        if not self.has_view_permission(request, agent):
            return HttpResponseRedirect(reverse("admin:index"))
        revisions = list(agent_revisions(agent=agent))
        rows = [
            {
                "revision": rev,
                "diff": revision_diff(revision=rev, against=older),
                "fields": revision_field_diff(revision=rev, against=older),
            }
            for rev, older in zip(revisions, [*revisions[1:], None], strict=True)
        ]
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "agent": agent,
            "rows": rows,
            "title": f"Revisions of {agent}",
            "can_restore": self.has_change_permission(request, agent),
        }
        return TemplateResponse(request, "admin/agents/agent/revisions.html", context)

    def restore_view(self, request: HttpRequest, agent_id: int, version: int) -> HttpResponse:
        """POST: make the agent as it was at `version` (a new revision records it)."""
        agent = get_object_or_404(Agent, pk=agent_id)
        revision = get_object_or_404(AgentRevision, agent=agent, version=version)
        if request.method != "POST" or not self.has_change_permission(request, agent):
            return HttpResponseRedirect(reverse("admin:agents_agent_revisions", args=[agent_id]))
        try:
            new = agent_revision_restore(revision=revision, user=request.user)
        except PublishHeld as held:
            messages.warning(request, held.message)
            return HttpResponseRedirect(_draft_url(held))
        except ValidationError as exc:
            problems = "; ".join(f"{field}: {' '.join(m)}" for field, m in exc.message_dict.items())
            messages.error(request, f"Version {version} cannot be restored: {problems}")
            return HttpResponseRedirect(reverse("admin:agents_agent_revisions", args=[agent_id]))
        messages.success(request, f"Restored version {version} as version {new.version}.")
        return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[agent_id]))


def _draft_url(held: PublishHeld) -> str:
    return reverse("admin:evals_agentdraft_change", args=[held.details["draft_id"]])


@admin.register(AgentRevision)
class AgentRevisionAdmin(admin.ModelAdmin):
    """Read-only list of every stored revision, with the evals it was published with."""

    list_display = ["agent", "version", "comment", "evals", "created_by", "created_at"]
    list_filter = ["agent"]
    readonly_fields = [
        "agent",
        "version",
        "snapshot",
        "comment",
        "evals",
        "created_by",
        "created_at",
    ]

    @admin.display(description="evals")
    def evals(self, obj: AgentRevision) -> str:
        """The eval result a gated publish recorded (blank: no gate applied)."""
        record = PublishRecord.objects.filter(revision=obj).first()
        if record is None:
            return ""
        suites = "; ".join(
            f"{s['suite']} {s['passed']}/{s['total']}" for s in record.result.get("suites", [])
        )
        verdict = "passed" if record.passed else "published anyway" if record.override else "—"
        return f"{verdict}: {suites}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Revisions are made by saving agents."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Revisions are history: never edited."""
        return False
