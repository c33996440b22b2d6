"""The admin home grouped by task (Agents, Knowledge, People, Usage, Quality, Runs), with the
pages admins use most linked at the top; only what the staff member may see."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _


@dataclass(frozen=True)
class Group:
    """A task and the admin apps and models that serve it ("app" or "app.model" keys)."""

    key: str
    name: str | Promise
    members: tuple[str, ...]


# A model key wins over its app's key; whatever no group names is listed under "Other".
GROUPS = (
    Group(
        "agents",
        _("Agents"),
        ("agents", "mcp", "routing"),
    ),
    Group("knowledge", _("Knowledge"), ("knowledge",)),
    Group(
        "people",
        _("People"),
        ("auth", "humans", "chat.chatpreference", "chat.apitoken", "channels"),
    ),
    Group("usage", _("Usage and cost"), ("usage",)),
    Group("quality", _("Quality"), ("evals", "chat.messagefeedback")),
    Group("runs", _("Runs and chats"), ("delegation", "chat")),
    Group("schedules", _("Tasks and schedules"), ("reminders", "django_celery_beat")),
)
OTHER = Group("other", _("Other"), ())
# Within a group, the models admins open most come first (in this order), then the rest A-Z.
FIRST = (
    "agents.agent",
    "mcp.mcpserver",
    "routing.routingpolicy",
    "knowledge.knowledgebase",
    "knowledge.document",
    "auth.user",
    "auth.group",
    "humans.inboxitem",
    "humans.review",
    "usage.usagerecord",
    "usage.modelprice",
    "usage.budget",
    "evals.evalsuite",
    "evals.evalrun",
    "evals.agentdraft",
    "delegation.run",
    "chat.chatsession",
)


@dataclass(frozen=True)
class Shortcut:
    """A page linked at the top of the home: shown when the model it reads may be viewed."""

    name: str | Promise
    url_name: str
    model: str  # "app_label.ObjectName" whose view permission opens the page; "" = any staff
    description: str | Promise = ""


SHORTCUTS = (
    Shortcut(_("Inbox"), "chat:inbox", "", _("Questions and approvals waiting for a person")),
    Shortcut(
        _("Cost dashboard"),
        "admin:usage_dashboard",
        "usage.UsageRecord",
        _("Cost per day, agent, user and session"),
    ),
    Shortcut(
        _("Delegation map"),
        "admin:agents_agent_map",
        "agents.Agent",
        _("Who may ask whom"),
    ),
    Shortcut(
        _("Runs"),
        "admin:delegation_run_changelist",
        "delegation.Run",
        _("Every turn with its trace"),
    ),
)


@dataclass
class HomeGroup:
    """One task's section of the home: its models as the admin's app list gives them."""

    key: str
    name: str | Promise
    models: list[dict[str, Any]] = field(default_factory=list)


def _group_of(app_label: str, object_name: str) -> Group:
    model_key = f"{app_label}.{object_name.lower()}"
    for group in GROUPS:
        if model_key in group.members:
            return group
    for group in GROUPS:
        if app_label in group.members:
            return group
    return OTHER


def home_groups(app_list: list[dict[str, Any]]) -> list[HomeGroup]:
    """The admin's app list (already filtered by permission) regrouped by task, in GROUPS
    order, empty groups left out."""
    found: dict[str, HomeGroup] = {}
    for app in app_list:
        for model in app["models"]:
            group = _group_of(app["app_label"], model["object_name"])
            home = found.setdefault(group.key, HomeGroup(group.key, group.name))
            home.models.append({**model, "app_label": app["app_label"], "app_name": app["name"]})
    for home in found.values():
        home.models.sort(key=_rank)
    order = [g.key for g in (*GROUPS, OTHER)]
    return [found[key] for key in order if key in found]


def _rank(model: dict[str, Any]) -> tuple[int, str]:
    key = f"{model['app_label']}.{model['object_name'].lower()}"
    return (FIRST.index(key) if key in FIRST else len(FIRST), str(model["name"]))


def home_shortcuts(request: HttpRequest, app_list: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The top links the staff member may open (the model each page reads must be viewable)."""
    viewable = {
        f"{app['app_label']}.{model['object_name']}"
        for app in app_list
        for model in app["models"]
        if model["perms"].get("view") or model["perms"].get("change")
    }
    links = []
    for shortcut in SHORTCUTS:
        if shortcut.model and shortcut.model not in viewable:
            continue
        if not shortcut.model and not request.user.is_staff:
            continue
        with suppress(NoReverseMatch):
            links.append(
                {
                    "name": shortcut.name,
                    "url": reverse(shortcut.url_name),
                    "description": shortcut.description,
                    "key": shortcut.url_name.rsplit(":", 1)[-1],
                }
            )
    return links


def admin_home(request: HttpRequest) -> dict[str, Any]:
    """Template context: `admin_home` builds the grouped home only when a template reads it."""

    def build() -> dict[str, Any]:
        app_list = admin.site.get_app_list(request)
        return {
            "groups": home_groups(app_list),
            "shortcuts": home_shortcuts(request, app_list),
        }

    return {"admin_home": build}
