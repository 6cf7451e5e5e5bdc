"""HTTPS through the provider's own transport: real TLS handshakes with a server on loopback.

Real endpoints are HTTPS, and the provider picks its own transport (:mod:`rescue_bench.models.http_pool`:
the SDK's aiohttp client, or httpx2), so TLS is exercised for real here: a self-signed certificate made by
``openssl``, trusted through ``SSL_CERT_FILE`` as a user would.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from rescue_bench.errors import RetryableError
from rescue_bench.models.base import Generation
from rescue_bench.models.openai_compat import OpenAICompatProvider
from rescue_bench.models.presets import get_preset
from rescue_bench.records import Request

pytestmark = [
    pytest.mark.subprocess,
    pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl is needed to make a cert"),
]
OPENAI = get_preset("openai")
OPENSSL_SELF_SIGNED = (
    *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost"),
    *("-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"),
)
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK expects
    seen: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Handler.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        text = json.dumps({"echo": body["messages"][-1]["content"]})
        reply = {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [*OPENSSL_SELF_SIGNED, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}/v1", cert
    server.shutdown()
    server.server_close()


def _request(text: str) -> Request:
    return Request("itp", ({"role": "user", "content": text},), {"type": "object"}, ("i",), max_tokens=50)


async def _ask_all(provider: OpenAICompatProvider, texts: list[str]) -> list[Any]:
    params = Generation(response_format="json_object")
    try:
        first = await asyncio.gather(*(provider.complete(_request(t), params) for t in texts))
        again = [await provider.complete(_request(t), params) for t in texts]  # kept-alive connections
        return [*first, *again]
    finally:
        await provider.aclose()


def test_requests_go_over_verified_tls(tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    base_url, cert = tls_server
    for var in PROXY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    _Handler.seen.clear()
    provider = OpenAICompatProvider(
        "m", preset=get_preset("openai"), base_url=base_url, api_key="sk-tls-test"
    )
    texts = [f"item {i}" for i in range(4)]
    replies = asyncio.run(_ask_all(provider, texts))
    assert [json.loads(r.text)["echo"] for r in replies] == texts + texts
    assert all(r.ok and r.usage.prompt_tokens == 3 for r in replies)
    assert len(_Handler.seen) == 8
    assert {s["path"] for s in _Handler.seen} == {"/v1/chat/completions"}
    assert {s["auth"] for s in _Handler.seen} == {"Bearer sk-tls-test"}


def test_an_untrusted_certificate_is_refused(
    tls_server: tuple[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    base_url, _ = tls_server
    for var in (*PROXY_VARS, "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(var, raising=False)
    _Handler.seen.clear()
    provider = OpenAICompatProvider(
        "m", preset=get_preset("openai"), base_url=base_url, api_key="sk-tls-test"
    )
    with pytest.raises(RetryableError, match="connection error") as caught:
        asyncio.run(_ask_all(provider, ["x"]))
    assert "sk-tls-test" not in str(caught.value)
    assert _Handler.seen == []
