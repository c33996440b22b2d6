"""Rules an MCP server definition must satisfy, shared by the admin form and the API."""

from __future__ import annotations

import re
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

# Header values come only from variables meant for MCP servers: a staff member who may edit a
# server must not be able to send the platform's own secrets (SECRET_KEY, DATABASE_URL) to a
# URL they choose.
ENV_NAME = re.compile(r"^MCP_[A-Z0-9_]{1,124}$")
HEADER_NAME = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$")  # an HTTP token
LANGUAGES = ("en", "zh-hant", "zh-hans")


def validate_headers(value: Any) -> None:
    """{"Header-Name": "ENV_VARIABLE"}: header names, and the variables their values come from."""
    if not isinstance(value, dict):
        raise ValidationError(
            "An object of header name → environment variable name, e.g. "
            '{"Authorization": "MCP_ERP_TOKEN"}.'
        )
    for header, variable in value.items():
        if not HEADER_NAME.match(str(header)):
            raise ValidationError(f"{header!r} is not an HTTP header name.")
        if not header_variable_allowed(variable):
            raise ValidationError(
                f"The value of {header!r} must name an environment variable starting with MCP_ "
                "(e.g. MCP_ERP_TOKEN) or listed in MCP_HEADER_VARIABLES; the secret itself is "
                "never stored."
            )


def header_variable_allowed(variable: Any) -> bool:
    """Whether a header may take its value from this environment variable: MCP_* names, or
    names an operator lists in MCP_HEADER_VARIABLES."""
    return isinstance(variable, str) and (
        bool(ENV_NAME.match(variable)) or variable in settings.MCP_HEADER_VARIABLES
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


def server_validate(*, transport: str, url: str, command: str, user_identity: str) -> None:
    """Raise ValidationError (keyed by field) for a server that cannot be reached as defined."""
    if transport == "stdio" and user_identity != "server":
        raise ValidationError(
            {
                "user_identity": "A stdio server has no requests to carry a user's identity: "
                "per-user servers must be streamable HTTP."
            }
        )
    if user_identity == "assertion" and not settings.MCP_USER_ASSERTION_KEY:
        raise ValidationError(
            {
                "user_identity": "Set MCP_USER_ASSERTION_KEY first: user assertions are never "
                "signed with the platform's SECRET_KEY."
            }
        )
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
