"""Rules an MCP server definition must satisfy, shared by the admin form and the API."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")  # an HTTP token
LANGUAGES = ("en", "zh-hant", "zh-hans")


def validate_headers(value: Any) -> None:
    """{"Header-Name": "ENV_VARIABLE"}: header names, and the variables their values come from."""
    if not isinstance(value, dict):
        raise ValidationError(
            "An object of header name → environment variable name, e.g. "
            '{"Authorization": "ERP_MCP_TOKEN"}.'
        )
    for header, variable in value.items():
        if not HEADER_NAME.match(str(header)):
            raise ValidationError(f"{header!r} is not an HTTP header name.")
        if not isinstance(variable, str) or not ENV_NAME.match(variable):
            raise ValidationError(
                f"The value of {header!r} must name an environment variable (e.g. ERP_MCP_TOKEN); "
                "the secret itself is never stored."
            )


def validate_display_names(value: Any) -> None:
    """{"zh-hant": "財務系統", ...}: a display name per language, each short text."""
    if not isinstance(value, dict):
        raise ValidationError('An object of language → name, e.g. {"zh-hant": "財務系統"}.')
    for language, name in value.items():
        if language not in LANGUAGES:
            raise ValidationError(f"Unknown language {language!r}: {', '.join(LANGUAGES)}.")
        if not isinstance(name, str) or not name.strip() or len(name) > 120:
            raise ValidationError(f"The {language} name must be text of 1 to 120 characters.")


def server_validate(*, transport: str, url: str, command: str) -> None:
    """Raise ValidationError (keyed by field) for a server that cannot be reached as defined."""
    if transport == "http" and not url:
        raise ValidationError({"url": "A streamable HTTP server needs its URL."})
    if transport == "stdio":
        if not command:
            raise ValidationError({"command": "A stdio server needs a command name."})
        if command not in settings.MCP_STDIO_COMMANDS:
            names = ", ".join(sorted(settings.MCP_STDIO_COMMANDS)) or "none"
            raise ValidationError(
                {"command": f"No command {command!r} in MCP_STDIO_COMMANDS (configured: {names})."}
            )
