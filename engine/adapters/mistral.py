"""Mistral providers: the ``mistral-embed`` embedder and the write-time classifier on a chat model.

The ``mistralai`` SDK (and ``httpx2``, its transport) is imported here and nowhere else; its errors are mapped
into ``engine.domain.errors`` at this boundary:

- a timeout, a connection failure, a 429 or a 5xx is retried with backoff, and once retries are exhausted it
  becomes ``BackendUnavailable`` (with the server's Retry-After, when it sent one);
- any other 4xx (bad key, unknown model, bad request), a body that is not the documented shape, and an answer
  that fails validation (wrong count, wrong dimension, a value out of range) is ``BackendRejected``. Values are
  never clamped: a model that says intensity 1.7 gave a bad answer, and the traces stay pending to be retried.

Retries are this module's loop, not the SDK's ``RetryConfig`` (the SDK's is switched off explicitly). In
mistralai 3.x the SDK's backoff is bounded by elapsed time only, so the ``max_retries`` count in the settings
cannot be expressed; it always adds up to a second of jitter unless told otherwise; it sleeps for whatever
Retry-After says, however long, while the caller (ingest, or the write lock of a session close) waits; and it
retries invisibly, so nothing is logged. Here: ``max_retries`` retries after the first attempt, exponential delays
``backoff_base_s * 2**retry`` capped at ``backoff_max_s`` with jitter in [50%, 100%], Retry-After honoured as
is; and a Retry-After longer than ``backoff_max_s`` is not waited out in-line: it is raised at once as
``BackendUnavailable(retry_after_s=...)``, for the background pass (or the API's 503) to come back later.
"""

from __future__ import annotations

import functools
import logging
import math
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypedDict, TypeVar, Unpack
from urllib.parse import urlsplit

import httpx2
import numpy as np
from mistralai.client import Mistral, errors, models
from mistralai.extra.utils.response_format import response_format_from_pydantic_model
from numpy.typing import NDArray
from pydantic import ValidationError

from engine.domain.errors import BackendRejected, BackendUnavailable, ConfigurationError
from engine.telemetry import span
from prompts.write_time import (
    PROMPT_VERSION,
    ChatMessage,
    ModelClassification,
    SessionClassification,
    session_classification_messages,
)

log = logging.getLogger("feltsense.mistral")

T = TypeVar("T")

DEFAULT_RETRY_AFTER_S = 5
"""What ``BackendUnavailable.retry_after_s`` says when the server gave no Retry-After."""
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


def _retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The server's requested wait in seconds: ``retry-after-ms``, or ``Retry-After`` as seconds or an HTTP date."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "..."


class _Retrying:
    """Runs one SDK call with retries and backoff, and maps whatever it raises into the engine's error tree."""

    def __init__(
        self,
        backend: str,
        *,
        timeout_s: float,
        max_retries: int,
        backoff_base_s: float,
        backoff_max_s: float,
        sleep: Callable[[float], None],
    ) -> None:
        if max_retries < 0:
            raise ConfigurationError(f"{backend}: max_retries must be 0 or more, got {max_retries}")
        if backoff_base_s < 0 or backoff_max_s < backoff_base_s:
            raise ConfigurationError(
                f"{backend}: need 0 <= backoff_base_s <= backoff_max_s, got {backoff_base_s} and {backoff_max_s}"
            )
        self.backend = backend
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._base_s = backoff_base_s
        self._max_s = backoff_max_s
        self._sleep = sleep
        self._jitter = random.Random()

    def delay_s(self, retry: int, retry_after_s: float | None) -> float:
        """How long to wait before retry number ``retry`` (0-based)."""
        if retry_after_s is not None:
            return retry_after_s
        return min(self._max_s, self._base_s * 2.0**retry) * self._jitter.uniform(0.5, 1.0)

    def call(self, operation: Callable[[], T], *, what: str) -> T:
        with span("mistral request", {"gen_ai.system": "mistral_ai", "feltsense.request": what}):  # counts only
            return self._call(operation, what=what)

    def _call(self, operation: Callable[[], T], *, what: str) -> T:
        attempts = self._max_retries + 1
        for attempt in range(attempts):
            retry_after: float | None = None
            try:
                return operation()
            except errors.ResponseValidationError as exc:
                # Status 200, but the body is not JSON or not the documented shape.
                raise BackendRejected(
                    f"{self.backend} answered {what} with a malformed body: {_short(str(exc))}", backend=self.backend
                ) from exc
            except errors.MistralError as exc:
                if exc.status_code not in RETRYABLE_STATUS:
                    raise BackendRejected(
                        f"{self.backend} refused {what}: HTTP {exc.status_code}: {_short(exc.body or exc.message)}",
                        backend=self.backend,
                    ) from exc
                failure: Exception = exc
                reason = f"HTTP {exc.status_code}"
                retry_after = _retry_after_s(exc.headers)
            except httpx2.TimeoutException as exc:
                failure, reason = exc, f"no answer within {self._timeout_s:g} s"
            except (httpx2.TransportError, errors.NoResponseError) as exc:
                failure, reason = exc, f"cannot be reached ({type(exc).__name__}: {exc})"

            if attempt == attempts - 1:
                break
            if retry_after is not None and retry_after > self._max_s:
                # Not waited out in-line: the caller holds a request (or the write lock) meanwhile.
                raise BackendUnavailable(
                    f"{self.backend}: {what} failed with {reason} and the server asks to retry in {retry_after:g} s",
                    backend=self.backend, retry_after_s=math.ceil(retry_after),
                ) from failure
            delay = self.delay_s(attempt, retry_after)
            log.warning("%s: %s failed with %s (attempt %d of %d); retrying in %.3g s",
                        self.backend, what, reason, attempt + 1, attempts, delay)
            self._sleep(delay)
        raise BackendUnavailable(
            f"{self.backend}: {what} failed after {attempts} attempt(s); last: {reason}",
            backend=self.backend,
            retry_after_s=DEFAULT_RETRY_AFTER_S if retry_after is None else max(1, math.ceil(retry_after)),
        ) from failure


def _client(api_key: str, *, server_url: str | None, timeout_s: float, backend: str) -> Mistral:
    if not api_key:
        raise ConfigurationError(f"{backend}: the API key is empty")
    if timeout_s <= 0:
        raise ConfigurationError(f"{backend}: timeout_s must be positive, got {timeout_s}")
    if server_url is not None:
        parts = urlsplit(server_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigurationError(f"{backend}: server_url must be an http(s) address, got {server_url!r}")
    # retry_config=None switches the SDK's own retries off explicitly: _Retrying does them (see the module doc).
    return Mistral(api_key=api_key, server_url=server_url, timeout_ms=max(1, round(timeout_s * 1000)),
                   retry_config=None)


def _sdk_message(message: ChatMessage) -> models.ChatCompletionRequestMessage:
    if message["role"] == "system":
        return models.SystemMessage(content=message["content"])
    return models.UserMessage(content=message["content"])


def _close(client: Mistral) -> None:
    """Close the SDK's connection pool (the SDK would at garbage collection; tests and shutdown want it now)."""
    http = client.sdk_configuration.client
    if http is not None:
        http.close()


class Connection(TypedDict, total=False):
    """How a provider reaches the API and retries (defaults in ``_MistralModel``): the options both share."""

    server_url: str | None
    timeout_s: float
    max_retries: int
    backoff_base_s: float
    backoff_max_s: float
    sleep: Callable[[float], None]


class _MistralModel:
    """A model on the Mistral API: its SDK client and this module's retry loop."""

    def __init__(
        self,
        api_key: str,
        *,
        model: str,
        server_url: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        backend = f"mistral:{model}"
        self._model = model
        self._client = _client(api_key, server_url=server_url, timeout_s=timeout_s, backend=backend)
        self._retrying = _Retrying(backend, timeout_s=timeout_s, max_retries=max_retries,
                                   backoff_base_s=backoff_base_s, backoff_max_s=backoff_max_s, sleep=sleep)

    def close(self) -> None:
        _close(self._client)


class MistralEmbedder(_MistralModel):
    """``mistral-embed`` (1024-d) behind the ``Embedder`` port: batched requests, L2-normalised float32 rows.

    ``model_id`` is the model name: it names the vector space, so a store never mixes these vectors with the
    local model's 384-d ones.
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "mistral-embed",
        dimension: int = 1024,
        batch_size: int = 64,
        **connection: Unpack[Connection],
    ) -> None:
        backend = f"mistral:{model}"
        if dimension < 1:
            raise ConfigurationError(f"{backend}: dimension must be positive, got {dimension}")
        if batch_size < 1:
            raise ConfigurationError(f"{backend}: batch_size must be positive, got {batch_size}")
        super().__init__(api_key, model=model, **connection)
        self._dimension = dimension
        self._batch_size = batch_size

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of strings, not a single string")
        texts = list(texts)
        out = np.empty((len(texts), self._dimension), dtype=np.float32)
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start:start + self._batch_size]
            request = functools.partial(self._client.embeddings.create, model=self._model, inputs=batch)
            response = self._retrying.call(request, what=f"an embeddings request for {len(batch)} texts")
            out[start:start + len(batch)] = self._vectors(response, len(batch))
        return out

    def _vectors(self, response: models.EmbeddingResponse, expected: int) -> NDArray[np.float32]:
        backend = self._retrying.backend

        def rejected(why: str) -> BackendRejected:
            return BackendRejected(f"{backend} returned unusable embeddings: {why}", backend=backend)

        if len(response.data) != expected:
            raise rejected(f"{len(response.data)} vectors for {expected} texts")
        indexes = [item.index for item in response.data if item.index is not None]
        if not indexes:
            ordered = list(response.data)  # no indexes: the documented order is the input order
        elif sorted(indexes) == list(range(expected)):
            ordered = sorted(response.data, key=lambda item: item.index or 0)
        else:
            raise rejected(f"indexes {[item.index for item in response.data]} are not 0..{expected - 1}")
        rows = []
        for position, item in enumerate(ordered):
            if item.embedding is None or len(item.embedding) != self._dimension:
                size = None if item.embedding is None else len(item.embedding)
                raise rejected(f"vector {position} has dimension {size}, expected {self._dimension}")
            rows.append(item.embedding)
        vectors = np.asarray(rows, dtype=np.float64)
        if not np.all(np.isfinite(vectors)):
            raise rejected("a vector holds NaN or infinite values")
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        if np.any(norms == 0.0):
            raise rejected("a vector is all zeros")
        normalised: NDArray[np.float32] = (vectors / norms).astype(np.float32)
        return normalised


class MistralClassifier(_MistralModel):
    """The write-time classifier on a Mistral chat model: one call per closed session, structured output.

    The model reads the whole session at once (``per_sentence`` is False), so context carries from turn to turn;
    it also names anchors and durable facts, which the write-time pass merges with the ones it extracts. The
    prompt and its response model live in ``prompts.write_time``; ``name`` carries its version.
    """

    def __init__(self, api_key: str, *, model: str = "mistral-small-latest", **connection: Unpack[Connection]) -> None:
        super().__init__(api_key, model=model, **connection)
        self._response_format = response_format_from_pydantic_model(SessionClassification)

    @property
    def name(self) -> str:
        return f"mistral:{self._model}@{PROMPT_VERSION}"

    @property
    def per_sentence(self) -> bool:
        return False

    def classify(self, texts: Sequence[str], embeddings: NDArray[np.float32]) -> list[ModelClassification]:
        """One classification per text, in order. ``embeddings`` are not used: the model reads the text."""
        if not texts:
            return []
        request = functools.partial(
            self._client.chat.complete, model=self._model,
            messages=[_sdk_message(m) for m in session_classification_messages(texts)],
            response_format=self._response_format, temperature=0.0,
        )
        response = self._retrying.call(request, what=f"a classification of {len(texts)} memories")
        return self._parse(response, len(texts))

    def _parse(self, response: models.ChatCompletionResponse, count: int) -> list[ModelClassification]:
        backend = self._retrying.backend

        def rejected(why: str) -> BackendRejected:
            return BackendRejected(f"{backend} returned an unusable classification: {why}", backend=backend)

        if not response.choices or response.choices[0].message is None:
            raise rejected("no message in the answer")
        choice = response.choices[0]
        if choice.finish_reason in ("length", "model_length"):
            raise rejected("the answer was cut off at the token limit")
        content = choice.message.content if choice.message is not None else None
        if isinstance(content, list):
            content = "".join(chunk.text for chunk in content if isinstance(chunk, models.TextChunk))
        if not isinstance(content, str) or not content.strip():
            raise rejected("the answer is empty")
        try:
            parsed = SessionClassification.model_validate_json(content)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'answer'}: {error['msg']}"
                for error in exc.errors(include_url=False, include_input=False)[:3]
            )
            raise rejected(f"{exc.error_count()} problem(s): {problems}") from exc
        try:
            ordered = parsed.in_order(count)
        except ValueError as exc:
            raise rejected(str(exc)) from exc
        # The model's facts come back structured: the trace keeps their sentences, ``extracted`` their slots.
        return [item.classification() for item in ordered]
