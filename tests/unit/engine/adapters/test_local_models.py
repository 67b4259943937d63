"""The two builds of the local embedder: both load, agree closely, and a store holds only one build's vectors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.adapters.embedded_store import EmbeddedStore
from engine.adapters.onnx_embedder import DIMENSION, PACKAGE_MODEL, QINT8_MODEL, OnnxEmbedder
from engine.domain.errors import ConfigurationError
from engine.factory import build_store
from engine.settings import Settings

pytestmark = pytest.mark.slow

TEXTS = ["Luna died on Sunday and I can't stop crying", "we walked in the park after work",
         "I got the job!", "my sister Maya is visiting next week"]


def test_the_int8_build_embeds_like_the_package_model_and_says_which_it_is() -> None:
    fp32, q8 = OnnxEmbedder(PACKAGE_MODEL), OnnxEmbedder(QINT8_MODEL)
    a, b = fp32.embed(TEXTS), q8.embed(TEXTS)
    assert (fp32.model_id, q8.model_id) == ("all-MiniLM-L6-v2-int8", "all-MiniLM-L6-v2-qint8")
    assert b.shape == (len(TEXTS), DIMENSION)
    assert np.all((a * b).sum(axis=1) > 0.95)
    # the same neighbours: each text is nearest to itself across the builds
    assert list(np.argmax(a @ b.T, axis=1)) == list(range(len(TEXTS)))


def test_a_store_written_by_one_build_refuses_the_other_and_names_the_setting(tmp_path: Path) -> None:
    EmbeddedStore(tmp_path, embedding_model=PACKAGE_MODEL.model_id, dimension=DIMENSION).close()
    settings = Settings(data_dir=tmp_path, local_model="minilm-l6-qint8")
    with pytest.raises(ConfigurationError, match="FELTSENSE_LOCAL_MODEL"):
        build_store(settings, OnnxEmbedder(QINT8_MODEL))
