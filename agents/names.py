"""Names and descriptions per language (en, zh-hant, zh-hans): which one people read, and the
rules a stored set of them must satisfy. Agents, knowledge bases and MCP servers share them."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.utils import translation
from django.utils.translation import gettext_lazy as _

from config.text import in_script

LANGUAGES = ("en", "zh-hant", "zh-hans")
NAME_MAX_CHARS = 120
DESCRIPTION_MAX_CHARS = 2000

# The other Chinese script: a name written in one is converted for readers of the other.
_OTHER_SCRIPT = {"zh-hant": "zh-hans", "zh-hans": "zh-hant"}


def language_key(language: str | None) -> str:
    """The key of `language` among LANGUAGES ("zh-TW" -> "zh-hant", "en-us" -> "en"); the
    active language when None; "" when it is none of them."""
    code = (language or translation.get_language() or "").lower().replace("_", "-")
    if code.startswith("zh"):
        traditional = code.startswith("zh-hant") or code in ("zh-tw", "zh-hk", "zh-mo")
        return "zh-hant" if traditional else "zh-hans"
    if code.startswith("en"):
        return "en"
    return ""


def text_in(texts: Any, fallback: str, language: str | None = None) -> str:
    """What people read in `language` (default: the active one): its own text there, else the
    other Chinese script's text converted (繁 <-> 简), else `fallback` (the plain name)."""
    texts = texts if isinstance(texts, dict) else {}
    key = language_key(language)
    own = texts.get(key)
    if isinstance(own, str) and own.strip():
        return own
    other = texts.get(_OTHER_SCRIPT.get(key, ""))
    if isinstance(other, str) and other.strip():
        return in_script(other, key)
    return fallback


def _validate(value: Any, *, what: Any, max_chars: int) -> None:
    """An object of language -> text: only LANGUAGES, text values, at most `max_chars` each."""
    example = '{"zh-hant": "財務專家", "zh-hans": "财务专家", "en": "Finance expert"}'
    if not isinstance(value, dict):
        raise ValidationError(
            _("An object of language → %(what)s, e.g. %(example)s.")
            % {"what": what, "example": example},
            code="invalid",
        )
    for language, text in value.items():
        if language not in LANGUAGES:
            raise ValidationError(
                _("Unknown language “%(language)s”: use %(languages)s.")
                % {"language": language, "languages": ", ".join(LANGUAGES)},
                code="unknown_language",
            )
        if not isinstance(text, str):
            raise ValidationError(
                _("The %(language)s %(what)s must be text.") % {"language": language, "what": what},
                code="invalid",
            )
        if len(text) > max_chars:
            raise ValidationError(
                _("The %(language)s %(what)s has %(length)s characters; the limit is %(limit)s.")
                % {"language": language, "what": what, "length": len(text), "limit": max_chars},
                code="max_length",
            )


def validate_display_names(value: Any) -> None:
    """{"zh-hant": "財務專家", ...}: a name per language, each text of at most 120 characters
    (an empty one counts as not set)."""
    _validate(value, what=_("name"), max_chars=NAME_MAX_CHARS)


def validate_descriptions(value: Any) -> None:
    """{"zh-hant": "預算與費用", ...}: a description per language, each text of at most 2000
    characters (an empty one counts as not set)."""
    _validate(value, what=_("description"), max_chars=DESCRIPTION_MAX_CHARS)


class NamedInLanguages:
    """For a model with `name`, `display_name`, `display_names`, `description` and
    `descriptions`: what people read of it in their language."""

    name: str
    display_name: str
    display_names: Any
    description: str
    descriptions: Any

    def name_in(self, language: str | None = None) -> str:
        """The name people read in `language` (default: the active one), falling back to the
        other Chinese script converted, then to the display name."""
        return text_in(self.display_names, self.display_name or self.name, language)

    def description_in(self, language: str | None = None) -> str:
        """The description people read in `language`, falling back as names do."""
        return text_in(self.descriptions, self.description, language)
