"""Admin for routing: policies with ordered rules inline, a test box, revisions, memories."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from agents.models import Agent
from agents.selectors import agent_usable_by
from delegation.routing import admin_stats  # noqa: F401  (registers the statistics page)
from delegation.routing.decide import RoutingInput, routing_decide
from delegation.routing.models import (
    RoutingPolicy,
    RoutingPolicyRevision,
    RoutingRule,
    SessionMemory,
)
from delegation.routing.revisions import policy_revision_record, policy_revision_restore
from delegation.runs.create import pinned_config


class RoutingRuleInline(admin.TabularInline):
    """The policy's rules, in the order they are tried (overrides first)."""

    model = RoutingRule
    extra = 1
    fields = [
        "kind",
        "order",
        "enabled",
        "name",
        "keywords",
        "pattern",
        "max_chars",
        "mode",
        "target",
        "strict_on_numbers",
        "reason",
    ]
    ordering = ["kind", "order", "pk"]
    formfield_overrides = {
        RoutingRule._meta.get_field("keywords").__class__: {
            "widget": forms.Textarea(attrs={"rows": 2, "cols": 40})
        }
    }


class RoutingPolicyForm(forms.ModelForm):
    """A policy; an entry agent may belong to one policy only."""

    class Meta:
        model = RoutingPolicy
        fields = [
            "name",
            "description",
            "entry_agents",
            "default_mode",
            "chat_top_k",
            "router_enabled",
            "router_provider",
            "router_model",
            "router_timeout",
            "memory_per_user",
            "learning",
            "learning_threshold",
            "learning_min_turns",
        ]

    def clean_entry_agents(self) -> Any:
        agents = self.cleaned_data["entry_agents"]
        taken = RoutingPolicy.objects.filter(entry_agents__in=agents)
        if self.instance.pk:
            taken = taken.exclude(pk=self.instance.pk)
        clash = Agent.objects.filter(routing_policies__in=taken, pk__in=[a.pk for a in agents])
        if clash.exists():
            names = ", ".join(sorted({a.name for a in clash}))
            raise forms.ValidationError(
                gettext("Already routed by another policy: %(names)s.") % {"names": names}
            )
        return agents


class PolicyTestForm(forms.Form):
    """The test box: a message and the request flags."""

    message = forms.CharField(
        label=_("Message"), widget=forms.Textarea(attrs={"rows": 3, "cols": 80})
    )
    force_strict = forms.BooleanField(required=False, label=_("Force STRICT"))
    force_guide = forms.BooleanField(required=False, label=_("Force GUIDE"))
    use_router = forms.BooleanField(
        required=False,
        label=_("Use the router"),
        help_text=_("Also call the router model for what no rule decides."),
    )


@admin.register(RoutingPolicy)
class RoutingPolicyAdmin(admin.ModelAdmin):
    """Routing policies, versioned; each save stores a revision."""

    form = RoutingPolicyForm
    inlines = [RoutingRuleInline]
    list_display = [
        "name",
        "default_mode",
        "router_enabled",
        "learning",
        "agents",
        "version",
        "test_link",
    ]
    filter_horizontal = ["entry_agents"]
    readonly_fields = ["version", "test_link", "revisions_link"]

    @admin.display(description=_("entry agents"))
    def agents(self, obj: RoutingPolicy) -> str:
        return ", ".join(a.name for a in obj.entry_agents.all()) or "—"

    @admin.display(description=_("test box"))
    def test_link(self, obj: RoutingPolicy) -> str:
        if not obj.pk:
            return "—"
        url = reverse("admin:routing_routingpolicy_test", args=[obj.pk])
        return format_html('<a href="{}">{}</a>', url, gettext("Test a message"))

    @admin.display(description=_("revisions"))
    def revisions_link(self, obj: RoutingPolicy) -> str:
        if not obj.pk:
            return "—"
        url = (
            reverse("admin:routing_routingpolicyrevision_changelist")
            + f"?policy__id__exact={obj.pk}"
        )
        count = obj.revisions.count()
        text = ngettext("%(count)d revision", "%(count)d revisions", count) % {"count": count}
        return format_html('<a href="{}">{}</a>', url, text)

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        policy_revision_record(policy=form.instance, user=request.user)

    def get_urls(self) -> list[Any]:
        return [
            path(
                "<int:policy_id>/test/",
                self.admin_site.admin_view(self.test_view),
                name="routing_routingpolicy_test",
            ),
            *super().get_urls(),
        ]

    def test_view(self, request: HttpRequest, policy_id: int) -> HttpResponse:
        """Type a message, see the decision and which rule matched (as you, the admin)."""
        policy = get_object_or_404(RoutingPolicy, pk=policy_id)
        form = PolicyTestForm(request.POST or None)
        decision = None
        if request.method == "POST" and form.is_valid():
            decision = policy_test(policy=policy, user=request.user, **form.cleaned_data).as_dict()
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Test routing policy “%(name)s”") % {"name": policy.name},
            "policy": policy,
            "form": form,
            "decision": decision,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/routing/policy_test.html", context)


def policy_test(
    *,
    policy: RoutingPolicy,
    user: Any,
    message: str,
    force_strict: bool = False,
    force_guide: bool = False,
    use_router: bool = False,
) -> Any:
    """The decision the policy makes for `message`, asked by `user`, through its first entry
    agent (the router model only when asked)."""
    entry = policy.entry_agents.first() or Agent.objects.filter(is_entry=True).first()
    config = (
        pinned_config(entry) if entry else {"provider": "offline", "model": "", "tool_keys": []}
    )
    allowed = entry.allowed_subagents.all() if entry else Agent.objects.all()
    targets = [
        a
        for a in allowed.filter(enabled=True, delegatable=True).select_related("access_group")
        if agent_usable_by(agent=a, user=user)
    ]
    if not use_router:
        policy.router_enabled = False  # this test only: rules, not the model
    return routing_decide(
        RoutingInput(
            text=message,
            policy=policy,
            entry=config,
            targets=targets,
            force_strict=force_strict,
            force_guide=force_guide,
            user=user,
        )
    )


@admin.register(RoutingPolicyRevision)
class RoutingPolicyRevisionAdmin(admin.ModelAdmin):
    """Stored versions of policies; restore one with the action."""

    list_display = ["policy", "version", "created_by", "created_at"]
    list_filter = ["policy"]
    readonly_fields = ["policy", "version", "snapshot", "created_by", "created_at"]
    actions = ["restore"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description=_("Restore the selected revision"))
    def restore(self, request: HttpRequest, queryset: Any) -> HttpResponseRedirect | None:
        if queryset.count() != 1:
            self.message_user(request, gettext("Select exactly one revision."), messages.ERROR)
            return None
        revision = queryset.get()
        policy_revision_restore(revision=revision, user=request.user)
        self.message_user(
            request,
            gettext("%(policy)s is as it was in v%(version)s.")
            % {"policy": revision.policy.name, "version": revision.version},
        )
        return HttpResponseRedirect(
            reverse("admin:routing_routingpolicy_change", args=[revision.policy_id])
        )


@admin.register(SessionMemory)
class SessionMemoryAdmin(admin.ModelAdmin):
    """What routing remembers, per session or user (read-only; delete to forget)."""

    list_display = ["__str__", "user", "updated_at"]
    readonly_fields = ["session", "user", "data", "updated_at"]
    search_fields = ["user__username"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
