"""The admin of runs, humans in the loop, evals, MCP servers, routing, chats, usage and reminders
can be shown in Chinese: every model, field, help text and choice of these apps is a lazy
translation, so a new one cannot slip through."""

from __future__ import annotations

from typing import Any

import pytest
from django.apps import apps
from django.db import models
from django.test.utils import isolate_apps
from django.utils.functional import Promise

from agents.revisions import Revision
from delegation.evals.admin import EvalCaseAdmin
from delegation.evals.forms import EvalCaseForm, PublishAnywayForm, RunSuiteForm

APPS = ["delegation", "humans", "evals", "mcp", "routing", "chat", "usage", "reminders"]


def app_models() -> list[type[models.Model]]:
    """Every model of the apps this admin covers."""
    return [model for label in APPS for model in apps.get_app_config(label).get_models()]


# Fields of agents.revisions.Revision (the agents app's, shared by routing policy revisions):
# labelled where that base class is, not here.
SHARED_REVISION_FIELDS = {"version", "snapshot", "created_by", "created_at"}


def own_fields(model: type[models.Model]) -> list[Any]:
    """The model's own fields (many-to-many too), without the ids Django adds by itself."""
    fields = [f for f in [*model._meta.fields, *model._meta.many_to_many] if not f.auto_created]
    if issubclass(model, Revision):
        fields = [f for f in fields if f.name not in SHARED_REVISION_FIELDS]
    return fields


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


@pytest.mark.parametrize("model", app_models(), ids=lambda m: m._meta.label)
def test_every_label_of_the_model_is_a_lazy_translation(model):
    assert untranslated(model) == []


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
