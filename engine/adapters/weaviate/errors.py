"""Weaviate's errors as the engine's, at the adapter's edge.

    unreachable, timed out, unavailable (502/503/504, gRPC UNAVAILABLE or DEADLINE_EXCEEDED, sockets)
        -> engine.domain.errors.BackendUnavailable
    anything else Weaviate refuses (a status, a batch object's error, a failed deletion)
        -> engine.domain.errors.BackendRejected

The engine's own errors pass through unchanged. ``boundary`` wraps every public method of the store: it
translates, and while the server is known to be down it fails at once (see ``WeaviateStore._check_reachable``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from weaviate import exceptions as wx
from weaviate.outputs.batch import BatchObjectReturn
from weaviate.outputs.data import DeleteManyReturn

from engine.domain.errors import BackendRejected, BackendUnavailable, FeltsenseError
from engine.telemetry import span

BACKEND = "weaviate"
SPAN_ATTRIBUTES = {"db.system.name": "weaviate"}

P = ParamSpec("P")
R = TypeVar("R")


class Guarded(Protocol):
    """What ``boundary`` needs of a store: whether the server is known to be down, and a readiness check."""

    _down: bool

    def _check_reachable(self, action: str) -> None: ...


S = TypeVar("S", bound=Guarded)


def _unavailable(exc: Exception, action: str) -> BackendUnavailable:
    return BackendUnavailable(f"Weaviate is unreachable ({action}): {exc}", backend=BACKEND)


@contextlib.contextmanager
def translated(action: str) -> Iterator[None]:
    """Weaviate's errors as the engine's: unreachable -> BackendUnavailable, refused -> BackendRejected."""
    try:
        yield
    except FeltsenseError:
        raise
    except (wx.WeaviateConnectionError, wx.WeaviateStartUpError, wx.WeaviateTimeoutError,
            wx.WeaviateGRPCUnavailableError, wx.WeaviateClosedClientError) as exc:
        raise _unavailable(exc, action) from exc
    except wx.UnexpectedStatusCodeError as exc:
        if exc.status_code in (502, 503, 504):
            raise _unavailable(exc, action) from exc
        raise BackendRejected(f"Weaviate refused to {action}: {exc}", backend=BACKEND) from exc
    except wx.WeaviateBaseError as exc:
        if any(marker in str(exc) for marker in ("StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED",
                                                 "Connection refused", "failed to connect")):
            raise _unavailable(exc, action) from exc
        raise BackendRejected(f"Weaviate refused to {action}: {exc}", backend=BACKEND) from exc
    except OSError as exc:  # sockets, from the HTTP or gRPC transport
        raise _unavailable(exc, action) from exc


def boundary(
    action: str,
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """A public method: errors translated, and fast failure while the server is known to be down."""

    def decorate(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def guarded(store: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            store._check_reachable(action)
            try:
                with span(f"weaviate {action}", SPAN_ATTRIBUTES), translated(action):
                    return method(store, *args, **kwargs)
            except BackendUnavailable:
                store._down = True
                raise

        return guarded

    return decorate


def missing_tenant(exc: wx.WeaviateBaseError) -> bool:
    # A partition nobody has written to has no tenant yet: reading it is an empty answer, not an error.
    return "tenant not found" in str(exc)


def check_inserted(result: BatchObjectReturn, what: str) -> None:
    if result.has_errors:
        first = next(iter(result.errors.values()))
        raise BackendRejected(
            f"Weaviate refused {len(result.errors)} of the {what} written: {first.message}", backend=BACKEND
        )


def check_deleted(result: DeleteManyReturn[None]) -> None:
    if result.failed:
        raise BackendRejected(f"Weaviate failed to delete {result.failed} objects", backend=BACKEND)
