"""Where and as whom the platform reaches a server: a client Target from its row and a user."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import time
from typing import Any

import jwt
from django.conf import settings
from django.utils.translation import gettext as _

from agents.mcp.client import Target
from agents.mcp.models import McpConnection, McpServer, Transport, UserIdentity
from agents.mcp.sealing import Unsealable, token_open
from agents.mcp.validation import header_variable_allowed


class ServerUnusable(Exception):
    """A server's configuration cannot be used (a missing command or secret)."""


class NotConnected(Exception):
    """A per-user ("token") server, and this user has not connected their own account."""


def target_for(server: McpServer, user: Any = None) -> Target:
    """The target of a server, as `user` for a per-user server (None: a sync, which lists
    tools without acting for anyone). NotConnected: a "token" server this user has not
    connected; the call then fails, never falling back to anyone else's rights."""
    common: dict[str, Any] = {
        "server": server.name,
        "connect_timeout": server.connect_timeout,
        "headers": tuple(sorted(_headers(server).items())),
    }
    if server.user_identity == UserIdentity.ASSERTION and user is not None:
        claims = _claims(server, user)
        # A session per user and what they are asserted to be: a change of groups opens anew.
        digest = hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).hexdigest()[:16]
        common["identity"] = f"{user.pk}:{digest}"
        assertion_key(server.name)  # unusable without the key: fail before connecting
        common["fresh_header"] = (
            settings.MCP_USER_ASSERTION_HEADER,
            lambda: user_assertion(claims),
        )
    if server.user_identity == UserIdentity.TOKEN and user is not None:
        token = _own_token(server, user)
        # The session is the user's and this token's: a token connected again opens a new one.
        common["identity"] = f"{user.pk}:{hashlib.sha256(token.encode()).hexdigest()[:16]}"
        common["headers"] = (*common["headers"], ("Authorization", f"Bearer {token}"))
    if server.transport == Transport.STDIO:
        return Target(transport="stdio", command=stdio_command(server.command), **common)
    return Target(transport="http", url=server.url, **common)


def _own_token(server: McpServer, user: Any) -> str:
    """The user's own token for the server; NotConnected when they have none (or it cannot be
    opened any more: the sealing key changed)."""
    connection = McpConnection.objects.filter(server=server, user=user).first()
    if connection is None:
        raise NotConnected(server.name)
    try:
        return token_open(connection.sealed_token)
    except Unsealable as exc:
        raise NotConnected(server.name) from exc


def stdio_command(name: str) -> tuple[str, ...]:
    """The command line MCP_STDIO_COMMANDS gives this name."""
    command = settings.MCP_STDIO_COMMANDS.get(name)
    if not command:
        raise ServerUnusable(
            _("No stdio command named %(name)s in MCP_STDIO_COMMANDS.") % {"name": repr(name)}
        )
    return tuple(str(part) for part in command)


def _headers(server: McpServer) -> dict[str, str]:
    """The server's headers, each value read from its environment variable now."""
    values = {}
    for header, variable in (server.headers or {}).items():
        if not header_variable_allowed(variable):  # (saved before the rule, or edited in SQL)
            raise ServerUnusable(
                _("Header %(header)s may not read the variable %(variable)s.")
                % {"header": header, "variable": variable}
            )
        value = os.environ.get(str(variable), "")
        if not value:
            raise ServerUnusable(
                _("The environment variable %(variable)s (header %(header)s) is not set.")
                % {"variable": variable, "header": header}
            )
        values[str(header)] = value
    return values


def _claims(server: McpServer, user: Any) -> dict[str, Any]:
    """Who the end user is, as a per-user server is told."""
    return {
        "iss": "agent-platform",
        "aud": server.name,
        "sub": str(user.pk),
        "preferred_username": user.get_username(),
        "email": getattr(user, "email", "") or "",
        "groups": sorted(user.groups.values_list("name", flat=True)),
    }


def user_assertion(claims: dict[str, Any]) -> str:
    """A short-lived signed assertion (JWT, HS256) of the end user's identity, signed with the
    key of the server it is for (`aud`)."""
    now = int(time.time())
    payload = {**claims, "iat": now, "exp": now + settings.MCP_USER_ASSERTION_SECONDS}
    return jwt.encode(payload, assertion_key(claims["aud"]), algorithm="HS256")


def assertion_key(server: str) -> str:
    """The key a server's user assertions are signed with: its own, derived from
    MCP_USER_ASSERTION_KEY, so one server's operator cannot sign for another server."""
    if not settings.MCP_USER_ASSERTION_KEY:
        raise ServerUnusable(
            _("MCP_USER_ASSERTION_KEY is not set: user assertions cannot be signed.")
        )
    base = settings.MCP_USER_ASSERTION_KEY.encode()
    return hmac.new(base, f"mcp-assertion:{server}".encode(), hashlib.sha256).hexdigest()
