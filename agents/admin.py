"""Admin for agents: edit with validation, every save a revision, diff and restore revisions."""

from __future__ import annotations

import uuid
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.forms import STALE_LABEL, AgentForm
from agents.forms_tools import tool_choices
from agents.map import agent_map, agent_map_warnings
from agents.map_svg import map_svg
from agents.models import AGENT_EDITABLE_FIELDS, Agent, AgentRevision, AnswerValidation
from agents.revision_fields import revision_field_diff
from agents.selectors import agent_revisions, revision_diff
from agents.services import PublishHeld, agent_revision_restore, agent_save
from agents.validation import stale_tool_keys
from agents.views import models_json, preview_start_json, preview_status_json
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

    # Both are shown by the tools picker (a switch and a toggle per tool), not as rows.
    approval_tool_keys = forms.MultipleChoiceField(choices=tool_choices, required=False)
    require_approval = forms.BooleanField(required=False)
    fallback_chain = forms.CharField(
        required=False,
        label=_("Fallback chain"),
        help_text=_(
            "Comma-separated, in order: retry, next_expert, then low_confidence or "
            "unanswered (which end the chain). Blank: invalid answers go on marked low "
            "confidence."
        ),
    )
    validate_answers = forms.ChoiceField(
        choices=AnswerValidation.choices,
        required=False,
        label=_("Validate answers"),
        help_text=_("Check this agent's answers before its caller gets them."),
    )
    answer_min_chars = forms.IntegerField(
        min_value=0,
        required=False,
        label=_("Answer min characters"),
        help_text=_("Rules: shortest valid answer (0: no bound)."),
    )
    answer_max_chars = forms.IntegerField(
        min_value=0,
        required=False,
        label=_("Answer max characters"),
        help_text=_("Rules: longest valid answer (0: no bound)."),
    )
    human_group = forms.ChoiceField(
        required=False,
        label=_("Assignment group"),
        help_text=_(
            "The staff group that sees this agent's questions, approvals and reviews "
            "(blank: every staff member)."
        ),
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
        (
            None,
            {
                "fields": [
                    "name",
                    "display_name",
                    "display_names",
                    "description",
                    "descriptions",
                    "tags",
                    "system_prompt",
                ]
            },
        ),
        (
            _("Model"),
            {
                "fields": [
                    "provider",
                    "model",
                    "base_url",
                    "api_key_env",
                    "secret_headers",
                    "call_timeout_seconds",
                    "temperature",
                    "max_tokens",
                ]
            },
        ),
        (
            _("Tools and delegation"),
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
            _("Answer quality"),
            {
                "classes": ["collapse"],
                "fields": [
                    "validate_answers",
                    "validator_model",
                    "answer_min_chars",
                    "answer_max_chars",
                    "fallback_chain",
                ],
            },
        ),
        (
            _("Humans in the loop"),
            {"classes": ["collapse"], "fields": ["human_sla_seconds", "human_group"]},
        ),
        (
            _("Availability"),
            {
                "fields": [
                    "enabled",
                    "delegatable",
                    "is_entry",
                    "a2a_enabled",
                    "access_group",
                    "access_permission",
                ]
            },
        ),
        (_("History"), {"fields": ["version", "revisions_link", "eval_suites"]}),
    ]
    PICKER_FIELDS = ["require_approval", "approval_tool_keys"]  # posted by the tools picker

    class Media:
        css = {"all": ["agents/agent_form.css"]}

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        """The form of the fieldsets plus the approval fields the tools picker posts."""
        fields = kwargs.get("fields")
        if fields is None:
            fields = [f for fs in self.get_fieldsets(request, obj) for f in fs[1]["fields"]]
        readonly = set(self.get_readonly_fields(request, obj))
        fields = [f for f in fields if f not in readonly and f not in self.PICKER_FIELDS]
        kwargs["fields"] = [*fields, *self.PICKER_FIELDS]
        return super().get_form(request, obj, change, **kwargs)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Agent]:
        """With each agent's live state and quality counts (delegation.humans.states)."""
        return super().get_queryset(request).annotate(**agent_annotations())

    @admin.display(description=_("state"))
    def live_state(self, obj: Agent) -> str:
        """idle, working n, waiting for experts n, waiting for a human n (oldest wait)."""
        return state_text(annotated_state(obj))

    @admin.display(description=_("quality"))
    def quality(self, obj: Agent) -> str:
        """Verdicts on its answers and reviews of them."""
        return quality_text(annotated_quality(obj))

    @admin.display(description=_("Knowledge bases"))
    def knowledge_links(self, obj: Agent) -> str:
        """The knowledge bases linked to the agent (each gives it kb_search and kb_documents),
        each linked to its page, where agents are added and removed."""
        add = reverse("admin:knowledge_knowledgebase_changelist")
        if not obj.pk or not obj.knowledge_bases.exists():
            return format_html(
                gettext(
                    'None. Link one on its <a href="{}">knowledge base page</a> to give this '
                    "agent the kb_search and kb_documents tools."
                ),
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
        return format_html(gettext("{} (kb_search and kb_documents are offered)"), links)

    @admin.display(description=_("eval suites"))
    def eval_suites(self, obj: Agent) -> str:
        """The suites that talk to or gate this agent, with their last result."""
        suites = suites_covering(agent=obj) if obj.pk else []
        if not suites:
            return gettext("None: add one under Evals → Eval suites to test this agent's edits.")
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>{} ({})',
            (
                (
                    reverse("admin:evals_evalsuite_change", args=[s.pk]),
                    s.name,
                    gettext(" · gates saves") if s.publish_gate else "",
                    run_link(s.runs.order_by("-created_at").first()),
                )
                for s in suites
            ),
        )

    @admin.display(description=_("Revisions"))
    def revisions_link(self, obj: Agent) -> str:
        """A link to the revision list (diff and restore)."""
        if not obj.pk:
            return gettext("Saved versions appear here.")
        url = reverse("admin:agents_agent_revisions", args=[obj.pk])
        count = obj.revisions.count()
        text = ngettext(
            "%(count)d revision: diff and restore", "%(count)d revisions: diff and restore", count
        ) % {"count": count}
        return format_html('<a href="{}">{}</a>', url, text)

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
                gettext(
                    "This agent lists tools %(label)s: %(tools)s. They are skipped at run time "
                    "and shown unticked under Tools: saving removes them unless you tick them."
                )
                % {"label": STALE_LABEL, "tools": ", ".join(stale)},
            )
        warnings = agent_map_warnings(agent=agent) if agent is not None else []
        extra_context = {**(extra_context or {}), "map_warnings": warnings}
        if agent is not None and self.has_change_permission(request, agent):
            extra_context["preview_url"] = reverse("admin:agents_agent_preview", args=[agent.pk])
        return super().change_view(request, object_id, form_url, extra_context)

    def models_view(self, request: HttpRequest) -> HttpResponse:
        """GET ?provider=…: the models the provider offers, for the model field's suggestions."""
        if not self.has_view_permission(request):
            return JsonResponse({"error": "forbidden"}, status=403)
        return models_json(request)

    def preview_view(self, request: HttpRequest, agent_id: int) -> HttpResponse:
        """POST the change form: its unsaved values answer a message in a sandboxed turn."""
        agent = get_object_or_404(Agent, pk=agent_id)
        if request.method != "POST" or not self.has_change_permission(request, agent):
            return JsonResponse({"error": "forbidden"}, status=403)
        form_class = self.get_form(request, agent, change=True)
        form = form_class(request.POST, instance=Agent.objects.get(pk=agent.pk))
        return preview_start_json(request, agent, form)

    def preview_status_view(self, request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
        """GET: a preview turn's status, answer and trace link."""
        if not self.has_change_permission(request):
            return JsonResponse({"error": "forbidden"}, status=403)
        return preview_status_json(request, run_id)

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
                    "{} "
                    '<form method="post" action="{}" style="display:inline">'
                    '<input type="hidden" name="csrfmiddlewaretoken" value="{}">'
                    '<button type="submit" class="button">{}</button>'
                    "</form>",
                    gettext(
                        "%(agent)s is not one of %(entry)s's experts yet, so users cannot reach it."
                    )
                    % {"agent": obj, "entry": entry},
                    url,
                    get_token(request),
                    gettext("Add it to %(entry)s's experts") % {"entry": entry},
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
            messages.error(
                request,
                gettext("%(expert)s was not added: %(problems)s")
                % {"expert": expert, "problems": " ".join(exc.messages)},
            )
            return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[expert_id]))
        messages.success(
            request,
            gettext("%(expert)s is now one of %(agent)s's experts.")
            % {"expert": expert, "agent": agent},
        )
        return HttpResponseRedirect(reverse("admin:agents_agent_change", args=[expert_id]))

    def map_view(self, request: HttpRequest) -> HttpResponse:
        """The delegation map: who may delegate to whom, as an SVG, with its warnings."""
        if not self.has_view_permission(request):
            return HttpResponseRedirect(reverse("admin:index"))
        dmap = agent_map()
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Delegation map"),
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
            gettext(
                "Editing the held draft (from v%(version)s): saving runs its eval suites again."
            )
            % {"version": draft.base_version},
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
                "models/", self.admin_site.admin_view(self.models_view), name="agents_agent_models"
            ),
            path(
                "<int:agent_id>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="agents_agent_preview",
            ),
            path(
                "preview/<uuid:run_id>/",
                self.admin_site.admin_view(self.preview_status_view),
                name="agents_agent_preview_status",
            ),
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
            "title": gettext("Revisions of %(agent)s") % {"agent": agent},
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
            messages.error(
                request,
                gettext("Version %(version)s cannot be restored: %(problems)s")
                % {"version": version, "problems": problems},
            )
            return HttpResponseRedirect(reverse("admin:agents_agent_revisions", args=[agent_id]))
        messages.success(
            request,
            gettext("Restored version %(version)s as version %(new)s.")
            % {"version": version, "new": new.version},
        )
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

    @admin.display(description=_("evals"))
    def evals(self, obj: AgentRevision) -> str:
        """The eval result a gated publish recorded (blank: no gate applied)."""
        record = PublishRecord.objects.filter(revision=obj).first()
        if record is None:
            return ""
        suites = "; ".join(
            f"{s['suite']} {s['passed']}/{s['total']}" for s in record.result.get("suites", [])
        )
        verdict = (
            gettext("passed")
            if record.passed
            else gettext("published anyway")
            if record.override
            else "—"
        )
        return f"{verdict}: {suites}"

    def has_add_permission(self, request: HttpRequest) -> bool:
        """Revisions are made by saving agents."""
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Revisions are history: never edited."""
        return False
