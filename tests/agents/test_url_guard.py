"""The SSRF guard: which addresses a model may have fetched, what WEB_FETCH_ALLOW opens, and a
connection that goes to the address that was checked (no second lookup to rebind)."""

from __future__ import annotations

import datetime
import functools
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from agents.registry import ToolContext, execute, get_tool
from agents.tools import url_guard
from agents.tools.url_guard import UrlRefused, address_forbidden, url_target
from tests.agents.test_web_fetch import LocalServer, Route, answer, local_server


@pytest.fixture
def serve() -> Iterator[Callable[[dict[str, Route]], LocalServer]]:
    """Start local servers for a test; all stop at its end."""
    with ExitStack() as stack:
        yield lambda routes: stack.enter_context(local_server(routes))


def resolver(*addresses: str) -> Callable[[str, int], list[str]]:
    """A name lookup that answers these addresses (a DNS server the test controls)."""
    return lambda host, port: list(addresses)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",  # loopback
        "127.8.9.10",
        "10.0.0.1",  # private
        "172.16.5.4",
        "192.168.1.1",
        "169.254.169.254",  # link-local: the cloud metadata address
        "0.0.0.0",  # unspecified
        "224.0.0.1",  # multicast
        "240.0.0.1",  # reserved
        "100.64.0.1",  # shared (carrier-grade NAT)
        "::1",
        "::",
        "fc00::1",  # unique local
        "fd12:3456::1",
        "fe80::1",  # link-local
        "ff02::1",  # multicast
        "::ffff:127.0.0.1",  # IPv4-mapped loopback
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",  # 169.254.169.254 through NAT64
    ],
)
def test_addresses_a_fetch_must_not_reach_are_forbidden(address):
    assert address_forbidden(address)


@pytest.mark.parametrize("address", ["93.184.215.14", "8.8.8.8", "2606:4700:4700::1111"])
def test_public_addresses_are_not(address):
    assert not address_forbidden(address)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/",
        "http://10.0.0.1/",
        "http://169.254.169.254/latest/meta-data/",
        "http://localhost:8000/",  # a name that resolves to loopback
        "http://[::1]/",
        "http://2130706433/",  # 127.0.0.1 written as one number
        "http://0x7f.1/",
    ],
)
def test_local_urls_are_refused_with_the_system_resolver(url, settings):
    settings.WEB_FETCH_ALLOW = []

    with pytest.raises(UrlRefused, match="local or private address"):
        url_target(url)


def test_a_public_url_is_pinned_to_the_address_that_was_checked(settings):
    settings.WEB_FETCH_ALLOW = []

    target = url_target("https://Example.COM:8443/a/b?q=1#part", resolve=resolver("93.184.215.14"))

    assert target.address == "93.184.215.14"
    assert str(target.connect_url) == "https://93.184.215.14:8443/a/b?q=1"
    assert target.host == "example.com" and target.host_header == "example.com:8443"
    assert str(target.url) == "https://example.com:8443/a/b?q=1"  # the fragment is not sent


def test_a_name_with_any_private_address_is_refused(settings):
    """A name that also answers 10.0.0.5 could be used to reach the inside: refused whole."""
    settings.WEB_FETCH_ALLOW = []

    with pytest.raises(UrlRefused, match=r"\(10\.0\.0\.5\)"):
        url_target("http://mixed.example/", resolve=resolver("93.184.215.14", "10.0.0.5"))


@pytest.mark.parametrize(
    ("allow", "url", "allowed"),
    [
        (["127.0.0.1:8080"], "http://127.0.0.1:8080/", True),
        (["127.0.0.1:8080"], "http://127.0.0.1:8081/", False),  # another port
        (["127.0.0.1:8080"], "http://localhost:8080/", True),  # the address is listed
        (["127.0.0.1"], "http://127.0.0.1:9/", True),  # any port
        (["localhost"], "http://localhost:5000/", True),
        (["intranet.example"], "http://intranet.example/", True),
        (["intranet.example:80"], "http://intranet.example/", True),  # the scheme's port
        (["intranet.example:80"], "https://intranet.example/", False),
        (["10.0.0.0/8"], "http://intranet.example/", True),  # CIDR
        (["10.1.0.0/16"], "http://intranet.example/", False),
        (["[::1]:8080"], "http://[::1]:8080/", True),
        (["::1"], "http://[::1]:1234/", True),
        (["intranet.example:http"], "http://intranet.example/", False),  # a typo opens nothing
        (["not a network/99"], "http://intranet.example/", False),
    ],
)
def test_web_fetch_allow_lists_hosts_ports_and_networks(settings, allow, url, allowed):
    settings.WEB_FETCH_ALLOW = allow
    answers = {"localhost": "127.0.0.1", "intranet.example": "10.0.0.7"}
    lookup = lambda host, port: [answers.get(host, host)]  # noqa: E731

    if allowed:
        assert url_target(url, resolve=lookup).address in {"127.0.0.1", "10.0.0.7", "::1"}
    else:
        with pytest.raises(UrlRefused):
            url_target(url, resolve=lookup)


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("file:///etc/passwd", "Only http and https"),
        ("ftp://example.com/x", "Only http and https"),
        ("gopher://127.0.0.1:6379/_FLUSHALL", "Only http and https"),
        ("javascript:alert(1)", "Only http and https"),
        ("/relative/path", "Only http and https"),
        ("http://user:secret@example.com/", "user name or password"),
        ("http://no-such-host.invalid/", "could not be found"),
    ],
)
def test_other_schemes_credentials_and_unknown_names_are_refused(url, words, settings):
    settings.WEB_FETCH_ALLOW = []

    with pytest.raises(UrlRefused, match=words):
        url_target(url)


def test_the_connection_goes_to_the_checked_address_with_the_name_as_host(
    serve, settings, monkeypatch
):
    """The name is looked up once, by the guard; the request goes to that address and still
    names the host. A second lookup (a rebinding DNS server's next answer) never happens:
    the system resolver does not know this name at all."""
    server = serve({"/page": answer("pinned page", "text/plain")})
    port = server.host_port.rsplit(":", 1)[1]
    lookups: list[str] = []

    def rebinding(host: str, port: int) -> list[str]:
        lookups.append(host)
        return ["127.0.0.1"] if len(lookups) == 1 else ["10.9.9.9"]

    monkeypatch.setattr(url_guard, "_resolve", rebinding)
    settings.WEB_FETCH_ALLOW = ["pinned.test"]

    result = execute(
        get_tool("web_fetch"),
        ToolContext(user=None),
        json.dumps({"url": f"http://pinned.test:{port}/page"}),
    )

    assert result.ok, result.error
    assert result.data["untrusted_page_text"] == "pinned page"
    assert lookups == ["pinned.test"]
    assert server.seen == [{"path": "/page", "host": f"pinned.test:{port}"}]


# --- https: the certificate is checked against the name, though the connection goes to the IP ---


def _certificate(
    name: str, issuer: tuple[ec.EllipticCurvePrivateKey, x509.Name] | None = None
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A key and certificate for `name`: a CA of its own (no issuer), else one it signs."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    signer, issuer_name = issuer or (key, subject)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime(2020, 1, 1))
        .not_valid_after(datetime.datetime(2100, 1, 1))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), False)
    return key, builder.sign(signer, hashes.SHA256())


class _Secure(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        answer("secure page", "text/plain")(self)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[tuple[int, list[str], ssl.SSLContext]]:
    """An https server on 127.0.0.1 with a certificate for "pinned.test" from a test CA: its
    port, the TLS names (SNI) clients asked for, and a client context that trusts the CA."""
    ca_key, ca = _certificate("Test CA")
    key, certificate = _certificate("pinned.test", (ca_key, ca.subject))
    (tmp_path / "cert.pem").write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    names: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    context.sni_callback = lambda sock, name, ctx: names.append(name)  # type: ignore[assignment,misc]
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Secure)
    server.daemon_threads = True
    server.handle_error = lambda request, address: None  # type: ignore[method-assign]
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
    trust = ssl.create_default_context(cadata=ca.public_bytes(serialization.Encoding.PEM).decode())
    yield server.server_address[1], names, trust
    server.shutdown()
    server.server_close()


def test_https_sends_the_name_and_verifies_the_certificate_against_it(
    tls_server, settings, monkeypatch
):
    """Both names lead to the same checked address; only the one the certificate is for is
    accepted, so the name (not the IP) is what TLS verified, and the name went out as SNI."""
    port, names, trust = tls_server
    monkeypatch.setattr(httpx, "Client", functools.partial(httpx.Client, verify=trust))
    monkeypatch.setattr(url_guard, "_resolve", lambda host, port: ["127.0.0.1"])
    settings.WEB_FETCH_ALLOW = ["pinned.test", "impostor.test"]
    tool = get_tool("web_fetch")

    good = execute(
        tool, ToolContext(user=None), json.dumps({"url": f"https://pinned.test:{port}/"})
    )
    bad = execute(
        tool, ToolContext(user=None), json.dumps({"url": f"https://impostor.test:{port}/"})
    )

    assert good.ok, good.error
    assert good.data["untrusted_page_text"] == "secure page"
    assert not bad.ok and "CERTIFICATE_VERIFY_FAILED" in bad.error
    assert names == ["pinned.test", "impostor.test"]
