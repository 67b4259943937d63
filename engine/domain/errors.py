"""The engine's error tree. Adapters translate vendor errors into it at the boundary; the API maps it to RFC 9457
problem details in one place.

    FeltsenseError
    ├── NotFound                 404: the thing does not exist (or is not the caller's to see)
    ├── Forbidden                403: the caller's role may not do this in that scope
    ├── InvalidInput             422: a value is wrong; says what, where and why
    ├── Conflict                 409: an id the service knows, sent again with other content or another owner
    ├── Gone                     410: an id whose content was erased; it is never stored again
    ├── Busy                     429 with Retry-After: the caller already has as much of this running as it may
    ├── ConfigurationError       the service is set up wrong (raised at startup)
    └── BackendError
        ├── BackendUnavailable   503 with Retry-After: a store, embedder or classifier cannot be reached
        └── BackendRejected      502: a backend answered, but refused or returned something invalid
"""

from __future__ import annotations


class FeltsenseError(Exception):
    """Base of every error the engine raises on purpose."""


class NotFound(FeltsenseError):
    pass


class Forbidden(FeltsenseError):
    pass


class InvalidInput(FeltsenseError):
    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class Conflict(FeltsenseError):
    def __init__(self, message: str, *, ids: tuple[str, ...] = (), field: str | None = None) -> None:
        super().__init__(message)
        self.ids = ids
        self.field = field


class Gone(FeltsenseError):
    def __init__(self, message: str, *, ids: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.ids = ids


class Busy(FeltsenseError):
    """The caller already has as much of this running as it may (one tuning replay per organisation)."""

    def __init__(self, message: str, *, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class ConfigurationError(FeltsenseError):
    pass


class BackendError(FeltsenseError):
    def __init__(self, message: str, *, backend: str) -> None:
        super().__init__(message)
        self.backend = backend


class BackendUnavailable(BackendError):
    def __init__(self, message: str, *, backend: str, retry_after_s: int = 5) -> None:
        super().__init__(message, backend=backend)
        self.retry_after_s = retry_after_s


class BackendRejected(BackendError):
    pass
