"""A fake Mistral API on 127.0.0.1, for driving the real ``mistralai`` SDK in tests without a network.

It speaks ``POST /v1/embeddings`` and ``POST /v1/chat/completions`` in the shapes the SDK parses, checks what the
real API would (the bearer key, the model name, the input's shape) and answers a 401, 400 or 422 when a request
is wrong. Answers are deterministic: vectors come from a hash of the text; classifications come from keywords
(``tests.fakes.KeywordClassifier``'s rules), with anchors and facts found by simple patterns, so a test can
predict them.

Failures are scripted: ``fail_next("rate_limited", times=2, retry_after="0")`` makes the next two requests
answer 429; see ``Failure`` for every mode. Every request is recorded (``requests``) for assertions.

    with FakeMistral() as fake:
        embedder = MistralEmbedder(fake.api_key, server_url=fake.url)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np

from tests.fakes import KeywordClassifier
from traces.resolution import resolution_kind

Failure = Literal[
    "rate_limited",  # 429, with Retry-After when given
    "server_error",  # 500
    "unavailable",  # 503
    "slow",  # answers correctly, but only after ``slow_s`` (longer than a test client's timeout)
    "malformed",  # 200 with a body that is not JSON
    "wrong_count",  # one vector, or one classification, fewer than asked for
    "wrong_dimension",  # embeddings: vectors one element short
    "out_of_range",  # chat: an intensity of 1.7 and a valence of -3
    "unknown_register",  # chat: a register outside the vocabulary
    "not_json",  # chat: prose instead of the JSON the schema asks for
    "refusal",  # chat: the model declines ("I'm sorry, but I can't help with that."), finish_reason stop
    "bad_resolution",  # chat: the last memory "resolves" a memory after itself (an index out of range)
]

_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
_THE_THING = re.compile(r"\bthe ([a-z]+)\b")
_NOT_NAMES = frozenset({"I", "Hey", "Hi", "Sorry", "Thanks", "Not", "She", "He", "They", "My", "The", "What", "It",
                        "We", "You", "Oh", "So", "And", "But", "Yes", "No", "Well", "That", "This", "Today"})
_PET = re.compile(r"\b[Mm]y (dog|cat) ([A-Z][a-z]+)")
_HOME = re.compile(r"\bI (?:live in|moved to) ([A-Z][a-z]+)")
_PRONOUN = re.compile(r"\b(?:she|her|he|him)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # the parsed JSON, or None when it was not JSON


@dataclass
class _Reply:
    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def fake_vector(text: str, dimension: int) -> np.ndarray:
    """The fake's vector for ``text``: deterministic, and deliberately not unit length (the adapter normalises)."""
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    return 3.0 * np.random.default_rng(seed).standard_normal(dimension)


def fake_classification(texts: list[str]) -> list[dict[str, Any]]:
    """The fake model's answer for one session's memories, in order (``index`` from 1, as the prompt numbers them).

    Like a model reading the whole session, a memory that names nobody but says "her" or "him" takes the
    anchors of the memory before it. A memory that reports a resolution ("the biopsy came back clear", by the
    rule list) says so, and names the earlier anxious or angry memories of the session as the ones it settles.
    """
    keyword = KeywordClassifier().classify(texts, np.zeros((len(texts), 1), dtype=np.float32))
    items: list[dict[str, Any]] = []
    previous_anchors: list[str] = []
    for index, (text, found) in enumerate(zip(texts, keyword, strict=True), start=1):
        anchors = list(dict.fromkeys(
            [w for w in _CAPITALISED.findall(text) if w not in _NOT_NAMES]
            + [f"the {thing}" for thing in _THE_THING.findall(text)]
        ))
        if not anchors and _PRONOUN.search(text):
            anchors = previous_anchors
        # Facts are structured, as prompts.write_time.FactItem asks; the sentences are what a test predicts.
        facts = [{"subject": f"user's {kind}", "relation": "name", "value": name,
                  "sentence": f"The user had a {kind} named {name}."} for kind, name in _PET.findall(text)]
        facts += [{"subject": "user", "relation": "lives_in", "value": place,
                   "sentence": f"The user lives in {place}."} for place in _HOME.findall(text)]
        kind = resolution_kind(text) if found.valence > 0 else None
        resolves = [item["index"] for item in items if item["register"] in ("anxiety", "anger")] if kind else []
        items.append({"index": index, "register": found.register, "valence": found.valence,
                      "intensity": found.intensity, "anchors": anchors, "facts": facts,
                      "resolution": kind or "none", "resolves": resolves})
        previous_anchors = anchors or previous_anchors
    return items


class FakeMistral:
    """The fake server. Start it with ``with FakeMistral() as fake:`` (or ``start()`` / ``stop()``)."""

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        embed_model: str = "mistral-embed",
        chat_model: str = "mistral-small-latest",
        dimension: int = 1024,
        slow_s: float = 2.0,
    ) -> None:
        self.api_key = api_key
        self.embed_model = embed_model
        self.chat_model = chat_model
        self.dimension = dimension
        self.slow_s = slow_s
        self.requests: list[RecordedRequest] = []
        self._failures: deque[tuple[Failure, str | None]] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._ids = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> FakeMistral:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                reply = fake._handle(self.path, {k.lower(): v for k, v in self.headers.items()}, raw)
                if reply.delay_s and fake._stopping.wait(reply.delay_s):
                    return
                try:
                    self.send_response(reply.status)
                    for name, value in {"Content-Type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # A short poll interval: shutdown() waits for the loop's next poll, and every test stops a server.
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="fake-mistral", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeMistral:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake Mistral server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    # -- scripting and inspection ------------------------------------------------------------------------------

    def fail_next(self, failure: Failure, times: int = 1, *, retry_after: str | None = None) -> None:
        """Make the next ``times`` requests (to either endpoint) fail as ``failure``."""
        with self._lock:
            self._failures.extend([(failure, retry_after)] * times)

    def clear_failures(self) -> None:
        """The provider recovers: requests succeed again."""
        with self._lock:
            self._failures.clear()

    def requests_to(self, path: str) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    # -- the API ------------------------------------------------------------------------------------------------

    def _handle(self, path: str, headers: dict[str, str], raw: bytes) -> _Reply:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        with self._lock:
            self.requests.append(RecordedRequest(path=path, headers=headers, body=body))
            failure, retry_after = self._failures.popleft() if self._failures else (None, None)

        if headers.get("authorization") != f"Bearer {self.api_key}":
            return _error(401, "Unauthorized")
        if failure == "rate_limited":
            return _error(429, "Requests rate limit exceeded",
                          headers={} if retry_after is None else {"Retry-After": retry_after})
        if failure in ("server_error", "unavailable"):
            return _error(500 if failure == "server_error" else 503, "Internal server error")
        if failure == "malformed":
            return _Reply(200, b'{"id": "broken", "data": [')
        if not isinstance(body, dict):
            return _error(400, "the body is not a JSON object")
        if path == "/v1/embeddings":
            reply = self._embeddings(body, failure)
        elif path == "/v1/chat/completions":
            reply = self._chat(body, failure)
        else:
            return _error(404, f"no route {path}")
        if failure == "slow":
            reply.delay_s = self.slow_s
        return reply

    def _embeddings(self, body: dict[str, Any], failure: Failure | None) -> _Reply:
        if body.get("model") != self.embed_model:
            return _error(400, f"Invalid model: {body.get('model')}")
        inputs = body.get("input")
        if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) and t for t in inputs):
            return _error(422, "input must be a non-empty list of non-empty strings")
        size = self.dimension - 1 if failure == "wrong_dimension" else self.dimension
        if failure == "wrong_count":
            inputs = inputs[:-1]
        data = [{"object": "embedding", "index": i, "embedding": fake_vector(text, self.dimension)[:size].tolist()}
                for i, text in enumerate(inputs)]
        tokens = sum(len(t.split()) for t in inputs)
        return _ok({"id": f"embd-{next(self._ids)}", "object": "list", "model": self.embed_model, "data": data,
                    "usage": {"prompt_tokens": tokens, "completion_tokens": 0, "total_tokens": tokens}})

    def _chat(self, body: dict[str, Any], failure: Failure | None) -> _Reply:
        if body.get("model") != self.chat_model:
            return _error(400, f"Invalid model: {body.get('model')}")
        messages = body.get("messages")
        if (not isinstance(messages, list) or len(messages) != 2
                or [m.get("role") for m in messages] != ["system", "user"]
                or not all(isinstance(m.get("content"), str) and m["content"] for m in messages)):
            return _error(422, "expected a system message and a user message, both with text")
        response_format = body.get("response_format") or {}
        if response_format.get("type") != "json_schema" or "schema" not in (response_format.get("json_schema") or {}):
            return _error(422, "expected a json_schema response_format")
        try:
            listed = json.loads(messages[1]["content"])["memories"]
            texts = [m["text"] for m in listed]
            assert [m["index"] for m in listed] == list(range(1, len(texts) + 1))
        except (ValueError, KeyError, TypeError, AssertionError):
            return _error(422, "the user message does not list the memories as JSON")

        items = fake_classification(texts)
        if failure == "wrong_count":
            items = items[:-1]
        elif failure == "out_of_range":
            items[0] = {**items[0], "intensity": 1.7, "valence": -3.0}
        elif failure == "unknown_register":
            items[0] = {**items[0], "register": "melancholy"}
        elif failure == "bad_resolution":
            items[-1] = {**items[-1], "resolution": "test_result", "resolves": [len(items) + 1]}
        if failure == "not_json":
            content = "Sure! Here is how each memory felt."
        elif failure == "refusal":
            content = "I'm sorry, but I can't help with that."
        else:
            content = json.dumps({"memories": items})
        return _ok({
            "id": f"cmpl-{next(self._ids)}", "object": "chat.completion", "model": self.chat_model,
            "created": int(time.time()),
            "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, "tool_calls": None}}],
        })


def _ok(payload: dict[str, Any]) -> _Reply:
    return _Reply(200, json.dumps(payload).encode())


def _error(status: int, message: str, *, headers: dict[str, str] | None = None) -> _Reply:
    payload = {"object": "error", "message": message, "type": "invalid_request_error", "code": str(status)}
    return _Reply(status, json.dumps(payload).encode(), headers or {})
