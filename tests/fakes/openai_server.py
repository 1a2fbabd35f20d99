"""A real HTTP server on 127.0.0.1 speaking the OpenAI API, for testing HTTP clients without mocks.

Routes map ``(method, path)`` to a handler that turns a recorded request into a ``Reply``. Scripted replies
(``script``) are served first, in order, and then the route's handler answers. Add an endpoint with
``route``; ``/v1/embeddings`` is installed by ``embeddings_handler`` and ``/v1/chat/completions`` by
``chat_handler`` (``chat_reply`` builds one scripted completion). Every request is recorded with the
``time.monotonic()`` it arrived at.

    with FakeOpenAIServer() as server:
        server.route("POST", "/v1/embeddings", embeddings_handler(dimensions=8))
        server.script("POST", "/v1/embeddings", Reply(429, headers={"Retry-After": "1"}))
        client = OpenAIEmbedder(base_url=server.base_url, ...)

        server.route("POST", "/v1/chat/completions", chat_handler(lambda req: {"summary": "..."}))
        server.script("POST", "/v1/chat/completions", chat_reply('{"summary": '), chat_reply("{}"))
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    body: bytes | None = None  # raw bytes win over ``json`` (malformed answers)
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (timeouts)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


Handler = Callable[[RecordedRequest], Reply]


class FakeOpenAIServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._routes: dict[tuple[str, str], Handler] = {}
        self._scripts: dict[tuple[str, str], deque[Reply]] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def route(self, method: str, path: str, handler: Handler) -> None:
        self._routes[(method.upper(), path)] = handler

    def script(self, method: str, path: str, *replies: Reply) -> None:
        with self._lock:
            self._scripts.setdefault((method.upper(), path), deque()).extend(replies)

    def calls(self, path: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path == path]

    def _answer(self, request: RecordedRequest) -> Reply:
        key = (request.method, request.path)
        with self._lock:
            self.requests.append(request)
            scripted = self._scripts.get(key)
            if scripted:
                return scripted.popleft()
        handler = self._routes.get(key)
        if handler is None:
            return Reply(404, {"error": {"message": f"no route {key}", "type": "invalid_request_error"}})
        return handler(request)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
                reply = server._answer(request)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = reply.body if reply.body is not None else json.dumps(reply.json).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return _Handler

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def fake_vector(text: str, dimensions: int) -> list[float]:
    """Deterministic, deliberately not normalised (clients must normalise)."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    return (np.random.default_rng(seed).normal(size=dimensions) * 3.0).tolist()  # type: ignore[no-any-return]


def embeddings_handler(dimensions: int, *, reverse: bool = True) -> Handler:
    """The OpenAI ``/embeddings`` answer; ``reverse`` lists the items last-first to test ordering by index."""

    def handle(request: RecordedRequest) -> Reply:
        body = request.json
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(text, dimensions)}
            for i, text in enumerate(inputs)
        ]
        if reverse:
            data.reverse()
        tokens = sum(len(t.split()) for t in inputs)
        return Reply(
            200,
            {
                "object": "list",
                "data": data,
                "model": body.get("model", "fake"),
                "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
            },
        )

    return handle


CHAT_PATH = "/v1/chat/completions"


def chat_reply(
    content: str | None,
    *,
    finish_reason: str = "stop",
    model: str = "fake-chat",
    usage: dict[str, int] | None = None,
    refusal: str | None = None,
    delay_s: float = 0.0,
) -> Reply:
    """One OpenAI ``chat.completion`` answer whose assistant message says ``content`` verbatim."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    return Reply(
        200,
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": usage if usage is not None else {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        delay_s=delay_s,
    )


def chat_handler(respond: Callable[[RecordedRequest], Any], *, model: str = "fake-chat") -> Handler:
    """The ``/chat/completions`` answer: ``respond(request)`` gives the content, a ``str`` sent verbatim or
    any other value sent as its JSON text (what a model obeying ``response_format`` would write)."""

    def handle(request: RecordedRequest) -> Reply:
        content = respond(request)
        return chat_reply(content if isinstance(content, str) else json.dumps(content), model=model)

    return handle
