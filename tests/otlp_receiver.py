"""A local OTLP/HTTP receiver for the tests: stores every request (path, content type, body) and
answers 200, on 127.0.0.1 and a free port; `protobuf_only` answers JSON with 415 as Phoenix does."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    path: str
    content_type: str
    body: bytes


class _Handler(BaseHTTPRequestHandler):
    disable_nagle_algorithm = True

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        server: Receiver = self.server  # type: ignore[assignment]
        content_type = self.headers.get("Content-Type", "")
        with server.lock:
            server.received.append(Received(self.path, content_type, body))
        if server.protobuf_only and content_type != "application/x-protobuf":
            self.send_response(415)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: object) -> None:
        return None


class Receiver(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, protobuf_only: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.protobuf_only = protobuf_only
        self.lock = threading.Lock()
        self.received: list[Received] = []
        self.thread = threading.Thread(target=self.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self.thread.join()
