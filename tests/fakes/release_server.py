"""A stand-in for both places the official release comes from, on 127.0.0.1: GitHub's raw file server and the
Hugging Face Hub (the few routes ``huggingface_hub.snapshot_download`` uses for a dataset).

A stdlib ``http.server`` in a background thread. Give it the release bytes; it serves them at the pinned
GitHub path and as the dataset's ``data/benchmark_191.jsonl``. :attr:`ReleaseServer.fault` scripts how a
download of the file goes wrong:

* ``"truncate"``: the full ``Content-Length`` is declared, half the body is sent, the connection is closed;
* ``"stall"``: half the body is sent, then nothing until :meth:`ReleaseServer.release_stall` (or the end);
* ``"drip"``: the body comes 2 bytes at a time, every 50 ms (a server too slow to ever finish);
* ``"404"``: the file is not there.

Every request path is logged in :attr:`ReleaseServer.requests`.
"""

from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

from rescue_bench.data.release import GITHUB_COMMIT, GITHUB_REPO, HF_REPO, RELEASE_PATH

Fault = Literal["truncate", "stall", "drip", "404"]
HF_COMMIT = "5" * 40
"""The fake dataset's commit, as the Hub would report it."""
GITHUB_PATH = f"/{GITHUB_REPO}/{GITHUB_COMMIT}/{RELEASE_PATH}"


class ReleaseServer:
    """``with ReleaseServer(body) as server:`` then ``server.base_url`` stands in for both sources."""

    def __init__(self, body: bytes, *, fault: Fault | None = None) -> None:
        self.body = body
        self.fault = fault
        self.requests: list[str] = []
        self._unstall = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        # shutdown() waits for the serving loop's next look at its flag: every 0.5 s by default.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def release_stall(self) -> None:
        self._unstall.set()

    def __enter__(self) -> ReleaseServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._unstall.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:  # keep pytest's output clean
                pass

            def do_HEAD(self) -> None:
                server._serve(self, head=True)

            def do_GET(self) -> None:
                server._serve(self, head=False)

        return Handler

    # -- routes ----------------------------------------------------------------------------------------------

    def _serve(self, handler: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = handler.path.split("?")[0]
        self.requests.append(f"{handler.command} {path}")
        api = f"/api/datasets/{HF_REPO}"
        if path == GITHUB_PATH:
            self._send_file(handler, head=head)
        elif path.startswith(f"{api}/revision/"):  # HfApi.repo_info
            info = {"id": HF_REPO, "sha": HF_COMMIT, "siblings": [{"rfilename": RELEASE_PATH}]}
            self._send_json(handler, info, head=head)
        elif path == f"{api}/tree/{HF_COMMIT}":  # HfApi.list_repo_tree (recursive)
            self._send_json(handler, self._hf_tree(), head=head)
        elif path == f"/datasets/{HF_REPO}/resolve/{HF_COMMIT}/{RELEASE_PATH}":
            self._send_file(handler, head=head, hub=True)
        else:
            self._send_json(handler, {"error": "not found"}, head=head, status=404)

    def _hf_tree(self) -> list[dict[str, object]]:
        oid = hashlib.sha1(self.body).hexdigest()
        folder = {"type": "directory", "path": "data", "oid": "d" * 40}
        return [folder, {"type": "file", "path": RELEASE_PATH, "size": len(self.body), "oid": oid}]

    def _send_json(
        self, handler: BaseHTTPRequestHandler, obj: object, *, head: bool, status: int = 200
    ) -> None:
        data = json.dumps(obj).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("X-Repo-Commit", HF_COMMIT)
        handler.end_headers()
        if not head:
            handler.wfile.write(data)

    def _send_file(self, handler: BaseHTTPRequestHandler, *, head: bool, hub: bool = False) -> None:
        if self.fault == "404":
            self._send_json(handler, {"error": "Entry not found"}, head=head, status=404)
            return
        body = self.body
        handler.send_response(200)
        handler.send_header("Content-Type", "text/plain; charset=utf-8")
        handler.send_header("Content-Length", str(len(body)))
        if hub:
            handler.send_header("X-Repo-Commit", HF_COMMIT)
            handler.send_header("ETag", f'"{hashlib.sha1(body).hexdigest()}"')
        handler.end_headers()
        if head:
            return
        if self.fault is None:
            handler.wfile.write(body)
            return
        if self.fault == "drip":
            for start in range(0, len(body), 2):
                if self._unstall.wait(timeout=0.05):
                    break
                handler.wfile.write(body[start : start + 2])
                handler.wfile.flush()
            handler.close_connection = True
            return
        handler.wfile.write(body[: len(body) // 2])
        handler.wfile.flush()
        if self.fault == "stall":
            self._unstall.wait(timeout=60)
        handler.close_connection = True
