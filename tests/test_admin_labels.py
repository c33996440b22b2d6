"""The admin of agents, knowledge, runs, humans in the loop, evals, MCP servers, routing, chats,
usage and reminders can be shown in Chinese: every model, field, help text and choice of these
apps, and every title their admin classes write, is a lazy translation, so a new one cannot slip
through."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.db import models
from django.test.utils import isolate_apps
from django.utils import translation
from django.utils.functional import Promise

from agents.mcp.models import McpServer
from agents.models import AgentRevision
from delegation.evals.admin import EvalCaseAdmin
from delegation.evals.forms import EvalCaseForm, PublishAnywayForm, RunSuiteForm
from delegation.routing.models import RoutingPolicyRevision

APPS = [
    "agents",
    "knowledge",
    "delegation",
    "humans",
    "evals",
    "mcp",
    "routing",
    "chat",
    "usage",
    "reminders",
]


def app_models() -> list[type[models.Model]]:
    """Every model of the apps this admin covers."""
    return [model for label in APPS for model in apps.get_app_config(label).get_models()]


def own_fields(model: type[models.Model]) -> list[Any]:
    """The model's own fields (many-to-many too), without the ids Django adds by itself."""
    return [f for f in [*model._meta.fields, *model._meta.many_to_many] if not f.auto_created]


def untranslated(model: type[models.Model]) -> list[str]:
    """What of `model` would be shown in English whatever the admin's language."""
    where = model._meta.label
    missing = [
        f"{where} Meta.{name}"
        for name in ("verbose_name", "verbose_name_plural")
        if not isinstance(getattr(model._meta, name), Promise)
    ]
    for field in own_fields(model):
        if not isinstance(field.verbose_name, Promise):
            missing.append(f"{where}.{field.name} verbose_name {field.verbose_name!r}")
        if field.help_text and not isinstance(field.help_text, Promise):
            missing.append(f"{where}.{field.name} help_text {field.help_text!r}")
        for value, label in field.flatchoices or []:
            if not isinstance(label, Promise):
                missing.append(f"{where}.{field.name} choice {value!r}: {label!r}")
    return missing


def test_the_apps_have_models_to_check():
    names = {model.__name__ for model in app_models()}
    assert {"Run", "InboxItem", "Review", "Activity", "EvalSuite", "EvalRun"} <= names
    assert {"McpServer", "RoutingPolicy", "ChatMessage", "Budget", "ScheduledPrompt"} <= names
    assert {"Agent", "AgentRevision", "KnowledgeBase", "Document", "McpTool", "McpSync"} <= names


def test_the_shared_revision_fields_are_labelled_once_for_every_revision():
    for model in (AgentRevision, RoutingPolicyRevision):
        labels = {f.name: f.verbose_name for f in model._meta.fields}
        for name in ("version", "snapshot", "created_by", "created_at"):
            assert isinstance(labels[name], Promise), (model, name)
        with translation.override("zh-hant"):
            assert str(labels["created_by"]) != "created by", model


@pytest.mark.parametrize("model", app_models(), ids=lambda m: m._meta.label)
def test_every_label_of_the_model_is_a_lazy_translation(model):
    assert untranslated(model) == []


def admin_texts(model_admin: Any) -> list[tuple[str, Any]]:
    """The column, read-only field and action titles an admin class writes itself, and its
    inlines' names."""
    texts = []
    names = [*model_admin.list_display, *model_admin.readonly_fields, *(model_admin.actions or [])]
    for name in names:
        method = getattr(type(model_admin), name, None) if isinstance(name, str) else name
        if method is not None and hasattr(method, "short_description"):
            texts.append((f"{name}", method.short_description))
    for inline in model_admin.inlines:
        texts += [(inline.__name__, inline.verbose_name)]
        texts += [(inline.__name__, inline.verbose_name_plural)]
        for name in [*(inline.fields or []), *inline.readonly_fields]:
            method = getattr(inline, name, None)
            if method is not None and hasattr(method, "short_description"):
                texts.append((f"{inline.__name__}.{name}", method.short_description))
    return [(name, text) for name, text in texts if text is not None]


ADMIN_TITLE_APPS = APPS  # every app's admin titles are translatable


@pytest.mark.parametrize(
    "model",
    [
        model
        for model in app_models()
        if model in admin.site._registry and model._meta.app_label in ADMIN_TITLE_APPS
    ],
    ids=lambda m: m._meta.label,
)
def test_the_admins_own_titles_are_lazy_translations(model):
    texts = admin_texts(admin.site._registry[model])
    assert [(name, text) for name, text in texts if not isinstance(text, Promise)] == []


def test_the_mcp_tools_are_headed_in_the_admins_language():
    inline = admin.site._registry[McpServer].inlines[0]
    with translation.override("zh-hant"):
        heading = str(inline.verbose_name_plural)
    assert heading.startswith("工具（核准設為「依其註記」時") and "Tools" not in heading


@isolate_apps("delegation.evals")
def test_the_check_finds_a_field_without_a_translated_label():
    class Plain(models.Model):
        note = models.CharField(max_length=10, help_text="Shown in English.")
        status = models.CharField(max_length=4, choices=[("new", "New")])

        class Meta:
            app_label = "evals"

        def __str__(self) -> str:
            return self.note

    missing = untranslated(Plain)
    assert any("note verbose_name 'note'" in m for m in missing)
    assert any("note help_text" in m for m in missing)
    assert any("status choice 'new'" in m for m in missing)
    assert any("Meta.verbose_name" in m for m in missing)


@pytest.mark.parametrize("form", [EvalCaseForm, RunSuiteForm, PublishAnywayForm])
def test_every_label_and_help_text_of_the_admin_forms_is_a_lazy_translation(form):
    model_fields = set(getattr(getattr(form, "Meta", None), "fields", []))
    for name, field in form.base_fields.items():
        if name in model_fields:
            continue  # labelled by the model's field (checked above)
        assert isinstance(field.label, Promise), (name, field.label)
        assert not field.help_text or isinstance(field.help_text, Promise), name


def test_fieldset_titles_of_the_case_page_are_lazy_translations():
    titles = [title for title, _ in EvalCaseAdmin.fieldsets if title is not None]
    assert titles and all(isinstance(title, Promise) for title in titles)
