from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest
from numpy.typing import NDArray


@pytest.fixture(scope="module")
def embed(onnx_embedder: Any) -> Callable[[Sequence[str]], NDArray[np.float32]]:
    """The real ONNX embedder's ``embed``, for the classifiers that read its vectors."""
    embedder: Callable[[Sequence[str]], NDArray[np.float32]] = onnx_embedder.embed
    return embedder
