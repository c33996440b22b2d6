"""The admin form for agents: tools as checkboxes from the registry, tags as text, validation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import construct_instance

from agents.models import AGENT_EDITABLE_FIELDS, Agent, validate_server_url
from agents.registry import all_tools
from agents.services import agent_check
from agents.validation import stale_tool_keys, tags_from_text, tags_to_text

STALE_LABEL = "removed from code"


def tool_choices() -> list[tuple[str, str]]:
    """Registry tools as (key, "key: description") checkbox choices."""
    return [
        (t.key, f"{t.key}: {t.description}" + (" (changes data)" if t.side_effect else ""))
        for t in all_tools()
    ]


def stale_choices(keys: list[str]) -> list[tuple[str, str]]:
    """Stale tool keys as checkbox choices that say the tool is gone."""
    return [(key, f"{key}: {STALE_LABEL} (skipped at run time)") for key in keys]


class AgentForm(forms.ModelForm):
    """Edits an agent; refuses unknown tools, self-delegation, bad limits and model settings.

    Tool keys the agent still lists but the code no longer registers are offered unticked and
    labelled "removed from code": saving removes them unless an admin ticks one to keep it.
    """

    tool_keys = forms.MultipleChoiceField(
        choices=tool_choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Tools registered in code; the agent may call only these.",
    )
    base_url = forms.CharField(
        required=False,
        validators=[validate_server_url],
        help_text="OpenAI-compatible server for this agent, e.g. http://vllm:8000/v1; blank uses "
        "OPENAI_BASE_URL.",
    )
    tags = forms.CharField(required=False, help_text="Comma-separated, e.g. finance, 财务, budget.")

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
        tools = self.fields.get("tool_keys")
        if tools is not None and self.stale_tool_keys:
            tools.choices = [*tool_choices(), *stale_choices(self.stale_tool_keys)]
            self.initial["tool_keys"] = [
                key for key in self.instance.tool_keys if key not in self.stale_tool_keys
            ]
            tools.help_text = (
                f"Tools {STALE_LABEL}: {', '.join(self.stale_tool_keys)}. They are skipped at "
                "run time; saving removes them unless you tick them."
            )

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
