"""A text per language (en, zh-hant, zh-hans) as three labelled inputs: an agent's names and
descriptions people read in their language."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from agents.names import LANGUAGES


class LanguageTextsWidget(forms.Widget):
    """One input per language, each labelled with the language's own name; posts
    `<name>_<language>`. Blank inputs are left out of the value (not set)."""

    def __init__(self, *, multiline: bool = False, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(attrs)
        self.multiline = multiline

    def value_from_datadict(self, data: Any, files: Any, name: str) -> dict[str, str]:
        """The non-blank texts posted, by language."""
        texts = {lang: str(data.get(f"{name}_{lang}", "")).strip() for lang in LANGUAGES}
        return {lang: text for lang, text in texts.items() if text}

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        """Whether the form posted none of the inputs (the stored value is kept)."""
        return not any(f"{name}_{lang}" in data for lang in LANGUAGES)

    def render(
        self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None
    ) -> SafeString:
        """The three labelled inputs."""
        texts = value if isinstance(value, dict) else {}
        labels = dict(settings.LANGUAGES)
        base_id = (attrs or {}).get("id") or f"id_{name}"
        rows = [
            {
                "language": lang,
                "label": labels.get(lang, lang),
                "name": f"{name}_{lang}",
                "id": f"{base_id}_{lang}",
                "value": texts.get(lang, ""),
            }
            for lang in LANGUAGES
        ]
        context = {"rows": rows, "multiline": self.multiline, "id": base_id}
        return render_to_string("admin/agents/agent/language_texts.html", context)


class LanguageTextsField(forms.Field):
    """A dict of language -> text (the model field's validators check it)."""

    def __init__(self, *, multiline: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        kwargs.setdefault("widget", LanguageTextsWidget(multiline=multiline))
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> dict[str, str]:
        """The texts, as a dict ({} when none is set)."""
        return dict(value) if isinstance(value, dict) else {}

    def has_changed(self, initial: Any, data: Any) -> bool:
        """Whether the posted texts differ from the stored ones (blank ones not counted)."""
        stored = {k: v for k, v in (initial or {}).items() if isinstance(v, str) and v.strip()}
        return stored != self.to_python(data)
