"""The admin form for agents: tools from the registry in one searchable picker (with a
"needs approval" toggle each), a model name with the provider's models offered, validation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance
from django.template.loader import render_to_string
from django.urls import NoReverseMatch, reverse
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy

from agents.forms_languages import LanguageTextsField
from agents.forms_tools import ToolPicker, tool_choices, tool_rows
from agents.models import AGENT_EDITABLE_FIELDS, Agent, validate_server_url
from agents.services import agent_check
from agents.validation import stale_tool_keys, tags_from_text, tags_to_text

STALE_LABEL = gettext_lazy("removed from code")


def stale_choices(keys: list[str]) -> list[tuple[str, str]]:
    """Stale tool keys as checkbox choices that say the tool is gone."""
    return [(key, f"{key}: {STALE_LABEL}") for key in keys]


class ModelNameInput(forms.TextInput):
    """A model name typed freely, with the provider's models offered as suggestions (a
    <datalist> the page's script fills from the admin's model list)."""

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        """The input, its list of suggestions and a line saying whether they loaded."""
        list_id = f"{(attrs or {}).get('id', 'id_' + name)}-options"
        try:
            url = reverse("admin:agents_agent_models")
        except NoReverseMatch:  # the form used outside this admin
            url = ""
        attrs = {**(attrs or {}), "list": list_id, "autocomplete": "off", "data-models-url": url}
        field = super().render(name, value, attrs, renderer)
        return render_to_string(
            "admin/agents/agent/model_input.html", {"field": field, "list_id": list_id}
        )


class AgentForm(forms.ModelForm):
    """Edits an agent; refuses unknown tools, self-delegation, bad limits and model settings.

    Tool keys the agent still lists but the code no longer registers are offered unticked and
    labelled "removed from code": saving removes them unless an admin ticks one to keep it.
    """

    tool_keys = forms.MultipleChoiceField(
        choices=tool_choices,
        widget=ToolPicker,
        required=False,
        label=gettext_lazy("Tools"),
        help_text=gettext_lazy(
            "The agent may call only the ticked tools. Search by name or description."
        ),
    )
    base_url = forms.CharField(
        required=False,
        validators=[validate_server_url],
        label=gettext_lazy("Base URL"),
        help_text=gettext_lazy(
            "OpenAI-compatible server for this agent, e.g. http://vllm:8000/v1; blank uses "
            "OPENAI_BASE_URL."
        ),
    )
    tags = forms.CharField(
        required=False,
        label=gettext_lazy("Tags"),
        help_text=gettext_lazy("Comma-separated, e.g. finance, 财务, budget."),
    )
    display_names = LanguageTextsField(
        label=gettext_lazy("Names per language"),
        help_text=gettext_lazy(
            "What people read in each language; a blank Chinese one is converted from the "
            "other script, else the display name is shown."
        ),
    )
    descriptions = LanguageTextsField(
        multiline=True,
        label=gettext_lazy("Descriptions per language"),
        help_text=gettext_lazy(
            "What people read about this agent in each language; blank ones fall back like "
            "the names, then to the description."
        ),
    )

    class Meta:
        model = Agent
        fields = AGENT_EDITABLE_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stale_tool_keys: list[str] = []
        if self.instance.pk:
            self.initial["tags"] = tags_to_text(self.instance.tags)
            subagents = self.fields.get("allowed_subagents")
            if subagents is not None:
                subagents.queryset = Agent.objects.exclude(pk=self.instance.pk)
            self.stale_tool_keys = stale_tool_keys(self.instance.tool_keys)
        model = self.fields.get("model")
        if model is not None:
            model.widget = ModelNameInput(attrs=model.widget.attrs)
        tools = self.fields.get("tool_keys")
        if tools is None:
            return
        if self.stale_tool_keys:
            tools.choices = [*tool_choices(), *stale_choices(self.stale_tool_keys)]
            self.initial["tool_keys"] = [
                key for key in self.instance.tool_keys if key not in self.stale_tool_keys
            ]
            tools.help_text = gettext_lazy(
                "Tools removed from code are skipped at run time; saving removes them unless "
                "you tick them."
            )
        tools.widget.rows = tool_rows(agent=self.instance, stale=self.stale_tool_keys)
        tools.widget.approval = self._approval_state()

    def _approval_state(self) -> dict[str, Any]:
        """The approval settings the picker shows: as posted, else as stored."""
        if "approval_tool_keys" not in self.fields:
            return {}
        if self.is_bound:
            keys = self.data.getlist("approval_tool_keys") if hasattr(self.data, "getlist") else []
            return {"keys": list(keys), "on": bool(self.data.get("require_approval"))}
        keys = self.initial.get("approval_tool_keys") or self.instance.approval_tool_keys or []
        on = self.initial.get("require_approval", self.instance.require_approval)
        return {"keys": list(keys), "on": bool(on)}

    def clean_secret_headers(self) -> dict[str, str]:
        """No headers when blank; a form posted without the field keeps the agent's headers."""
        if "secret_headers" not in self.data:
            return dict(self.instance.secret_headers or {})
        return self.cleaned_data.get("secret_headers") or {}

    def clean_tags(self) -> list[str]:
        """Tags as a list."""
        return tags_from_text(self.cleaned_data.get("tags") or "")

    def _post_clean(self) -> None:
        """Model and cross-field rules come from the save service's own check, so the form and
        the API refuse the same definitions (the entry flag is not a rule: saving moves it)."""
        try:
            self.instance = construct_instance(
                self, self.instance, self._meta.fields, self._meta.exclude
            )
            agent_check(
                agent=self.instance,
                subagents=self.cleaned_data.get("allowed_subagents"),
                exclude=self._get_validation_exclusions(),
            )
        except ValidationError as exc:
            self._update_errors(exc)
