"""The typed Python client of the feltsense service, for character runtimes.

    from feltsense_client import FeltsenseClient, RecallQuery, Turn

``FeltsenseClient`` (and ``AsyncFeltsenseClient`` for asyncio) sends ``Turn``s, closes sessions and recalls with a
``RecallQuery``; errors leave as ``FeltsenseAPIError`` and its subclasses. Every model the client sends or reads is
in ``feltsense_client.models``; the ones a runtime names are also here.
"""

from feltsense_client._client import (
    AsyncFeltsenseClient,
    AuthError,
    ConflictError,
    FeltsenseAPIError,
    FeltsenseClient,
    GoneError,
    NotFoundError,
    UnavailableError,
    ValidationError,
    __version__,
)
from feltsense_client.models import (
    CloseAccepted,
    CloseReport,
    CloseResult,
    CompactRecall,
    IngestReport,
    RecallDetail,
    RecallQuery,
    RecallResult,
    Turn,
    WindowTurn,
)

__all__ = [
    "AsyncFeltsenseClient",
    "AuthError",
    "CloseAccepted",
    "CloseReport",
    "CloseResult",
    "CompactRecall",
    "ConflictError",
    "FeltsenseAPIError",
    "FeltsenseClient",
    "GoneError",
    "IngestReport",
    "NotFoundError",
    "RecallDetail",
    "RecallQuery",
    "RecallResult",
    "Turn",
    "UnavailableError",
    "ValidationError",
    "WindowTurn",
    "__version__",
]
