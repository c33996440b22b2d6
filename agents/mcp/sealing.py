"""Sealing users' tokens for per-user MCP servers at rest (Fernet: AES-128-CBC with HMAC)."""

from __future__ import annotations

import base64
import hashlib
from functools import lru_cache

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings


class Unsealable(Exception):
    """A sealed token that this key cannot open (the key changed, or it was tampered with)."""


def token_seal(token: str) -> str:
    """The token encrypted and authenticated with the sealing key."""
    return _fernet(_key_material()).encrypt(token.encode()).decode()


def token_open(sealed: str) -> str:
    """The token a `token_seal` sealed; Unsealable if this key cannot open it."""
    try:
        return _fernet(_key_material()).decrypt(sealed.encode()).decode()
    except InvalidToken as exc:
        raise Unsealable("the sealed token cannot be opened with the current key") from exc


def _key_material() -> str:
    """MCP_TOKEN_KEY, else SECRET_KEY (changing it makes users connect again)."""
    return settings.MCP_TOKEN_KEY or settings.SECRET_KEY


@lru_cache(maxsize=4)
def _fernet(material: str) -> Fernet:
    digest = hashlib.sha256(f"mcp-token-seal:{material}".encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))
