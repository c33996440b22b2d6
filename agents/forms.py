"""The admin form for agents: tools as checkboxes from the registry, tags as text, validation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from agents.models import AGENT_EDITABLE_FIELDS, Agent
from agents.registry import all_tools
from agents.validation import agent_validate, tags_from_text, tags_to_text


def tool_choices() -> list[tuple[str, str]]:
    """Registry tools as (key, "key: description") checkbox choices."""
    return [
        (t.key, f"{t.key}: {t.description}" + (" (changes data)" if t.side_effect else ""))
        for t in all_tools()
    ]


class AgentForm(forms.ModelForm):
    """Edits an agent; refuses unknown tools, self-delegation, bad limits and model settings."""

    tool_keys = forms.MultipleChoiceField(
        choices=tool_choices,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Tools registered in code; the agent may call only these.",
    )
    base_url = forms.URLField(
        required=False,
        assume_scheme="https",
        help_text="OpenAI-compatible server for this agent; blank uses OPENAI_BASE_URL.",
    )
    tags = forms.CharField(required=False, help_text="Comma-separated, e.g. finance, 财务, budget.")

    class Meta:
        model = Agent
        fields = AGENT_EDITABLE_FIELDS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk:
            self.initial["tags"] = tags_to_text(self.instance.tags)
            subagents = self.fields.get("allowed_subagents")
            if subagents is not None:
                subagents.queryset = Agent.objects.exclude(pk=self.instance.pk)

    def _get_validation_exclusions(self) -> set[str]:
        """Leave is_entry out of model validation: saving an entry agent moves the flag to it
        (AgentAdmin.save_model), so the one-entry constraint must not refuse the form first."""
        return {*super()._get_validation_exclusions(), "is_entry"}

    def clean_tags(self) -> list[str]:
        """Tags as a list."""
        return tags_from_text(self.cleaned_data.get("tags") or "")

    def clean(self) -> dict[str, Any]:
        """Cross-field rules shared with the API (agents.validation)."""
        data = super().clean()
        subagents = data.get("allowed_subagents")
        try:
            agent_validate(
                agent_pk=self.instance.pk,
                tool_keys=list(data.get("tool_keys") or []),
                allowed_subagent_pks=[a.pk for a in subagents] if subagents is not None else [],
                provider=data.get("provider") or "default",
                model=data.get("model") or "",
                access_permission=data.get("access_permission") or "",
                is_entry=bool(data.get("is_entry")),
                enabled=bool(data.get("enabled")),
            )
        except ValidationError as exc:
            for field, messages in exc.message_dict.items():
                self.add_error(field if field in self.fields else None, messages)
        return data
