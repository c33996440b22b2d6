"""A local OpenID Connect provider for tests: discovery, token (authorization code with PKCE),
userinfo and JWKS over real HTTP, ID tokens signed RS256 with a key made per server. A test
plays the person signing in at the provider with `sign_in`, which returns the code the
provider would redirect back with."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class FakeIdP:
    """The provider; `url` is its issuer (OIDC_ISSUER)."""

    def __init__(self, client_id: str = "platform", client_secret: str = "platform-secret") -> None:
        self.client_id, self.client_secret = client_id, client_secret
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(4)
        self.codes: dict[str, dict[str, Any]] = {}
        self.tokens: dict[str, dict[str, Any]] = {}
        self.next_person: dict[str, Any] = {}  # who signs in at the provider's own page
        self.lock = threading.Lock()
        idp = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                path = urlsplit(self.path).path
                if path == "/.well-known/openid-configuration":
                    return self._json(200, idp.discovery())
                if path == "/jwks":
                    return self._json(200, idp.jwks())
                if path == "/authorize":  # the person signs in at once, as `next_person`
                    code = idp.sign_in(self.path, idp.next_person)
                    query = parse_qs(urlsplit(self.path).query)
                    target = f"{query['redirect_uri'][0]}?" + urlencode(
                        {"code": code, "state": query["state"][0]}
                    )
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.end_headers()
                    return None
                if path == "/userinfo":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    with idp.lock:
                        claims = idp.tokens.get(token)
                    return self._json(200, claims) if claims else self._json(401, {})
                return self._json(404, {})

            def do_POST(self) -> None:  # noqa: N802
                if urlsplit(self.path).path != "/token":
                    return self._json(404, {})
                length = int(self.headers.get("Content-Length", 0))
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(length).decode()).items()}
                status, body = idp.token(form)
                return self._json(status, body)

            def _json(self, status: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def discovery(self) -> dict[str, Any]:
        """The provider's discovery document."""
        return {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "userinfo_endpoint": f"{self.url}/userinfo",
            "jwks_uri": f"{self.url}/jwks",
            "id_token_signing_alg_values_supported": ["RS256"],
        }

    def jwks(self) -> dict[str, Any]:
        """The public key the ID tokens are signed with."""
        numbers = self.key.public_key().public_numbers()
        key = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid}
        return {"keys": [key | {"n": _b64(numbers.n), "e": _b64(numbers.e)}]}

    def sign_in(self, authorize_url: str, claims: dict[str, Any]) -> str:
        """The person signs in at the provider's page the platform redirected to: the code."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(authorize_url).query).items()}
        assert query["client_id"] == self.client_id and query["response_type"] == "code"
        code = secrets.token_urlsafe(16)
        with self.lock:
            self.codes[code] = {"query": query, "claims": claims}
        return code

    def token(self, form: dict[str, str]) -> tuple[int, dict[str, Any]]:
        """The token endpoint: a code (once), its PKCE verifier and the client's secret."""
        with self.lock:
            grant = self.codes.pop(form.get("code", ""), None)
        if grant is None or form.get("client_secret") != self.client_secret:
            return 400, {"error": "invalid_grant"}
        query = grant["query"]
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
        if challenge.rstrip(b"=").decode() != query.get("code_challenge"):
            return 400, {"error": "invalid_grant", "error_description": "PKCE"}
        if form.get("redirect_uri") != query["redirect_uri"]:
            return 400, {"error": "invalid_grant", "error_description": "redirect_uri"}
        now = int(time.time())
        id_token = self.id_token(
            {
                "iss": self.url,
                "aud": self.client_id,
                "sub": grant["claims"]["sub"],
                "iat": now,
                "exp": now + 300,
                "nonce": query.get("nonce"),
            }
        )
        access = secrets.token_urlsafe(16)
        with self.lock:
            self.tokens[access] = grant["claims"]
        return 200, {"access_token": access, "id_token": id_token, "token_type": "Bearer"}

    def id_token(self, payload: dict[str, Any], key: Any = None) -> str:
        """An ID token signed with the provider's key (or another, to forge one)."""
        return jwt.encode(payload, key or self.key, algorithm="RS256", headers={"kid": self.kid})

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
