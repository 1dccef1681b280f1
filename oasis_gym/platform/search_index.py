"""In-memory text index for ``search_posts`` / ``search_users``: cost O(matches), not O(posts).

Semantics are exactly those of the brute-force scan it replaces: a document matches when
every query word (``query.lower().split()``) is a *substring* of the document's lowercased
text. A query word holds no whitespace, so it is a substring of the text exactly when it
is a substring of one whitespace-separated token of the lowercased text. Hence:

* every distinct lowercased token gets an id; the tokens containing a word of 3+ characters
  are found from a trigram index of the vocabulary (the tokens holding the word's rarest
  trigram, each checked with ``in``); shorter or unselective words scan the vocabulary,
  kept joined by ``"\\n"`` in a few chunk strings, with C-speed ``str.find``. Both are
  cached per word and extended only over tokens added since;
* postings (token id -> sorted document ids) live in a base CSR plus a small delta CSR for
  the documents added since the last merge (merged when the delta passes a quarter of the
  base), so a word's documents are gathered with numpy in time proportional to them;
* the documents of several words are intersected smallest first (binary search when sizes
  differ a lot).

Documents are the platform's posts (reposts index as empty text: they never match) or users,
appended in id order. The index syncs lazily before each query from the platform's columns,
so it needs no hooks in post creation, sign-up or journal loading. Texts never change once
written; if the count shrinks or the newest indexed post's text object changed (state
rolled back), the index is rebuilt from scratch.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from .kinds import REPOST

_EMPTY = np.zeros(0, dtype=np.int64)
_WORD_CACHE = 4096  # words whose matching token ids are remembered
_DOC_CACHE_BUDGET = 8_000_000  # document ids kept in the per-word cache, in all (64 MB)
_RANK_HEAD = 64  # extra posts ranked beyond k before visibility is checked
_CHUNK_MERGE = 16  # vocabulary chunks kept before they are joined into one


def _gather(indptr: np.ndarray, docs: np.ndarray, toks: np.ndarray) -> np.ndarray:
    """Concatenated postings of token ids `toks` (ids past the CSR's end have none)."""
    toks = toks[toks < len(indptr) - 1]
    if not len(toks):
        return _EMPTY
    starts, ends = indptr[toks], indptr[toks + 1]
    lens = ends - starts
    total = int(lens.sum())
    if total == 0:
        return _EMPTY
    if len(toks) == 1:
        return docs[starts[0] : ends[0]]
    offs = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return docs[offs + np.arange(total, dtype=np.int64)]


def _csr(tok: np.ndarray, doc: np.ndarray, n_tokens: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, docs) with docs sorted by (token, doc); `doc` must be ascending already."""
    order = np.argsort(tok, kind="stable")
    indptr = np.zeros(n_tokens + 1, dtype=np.int64)
    np.cumsum(np.bincount(tok, minlength=n_tokens), out=indptr[1:])
    return indptr, doc[order]


def _intersect(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sorted unique a ∩ b (both sorted unique); binary search when one is much smaller."""
    if len(a) > len(b):
        a, b = b, a
    if not len(a):
        return _EMPTY
    if len(a) * 16 < len(b):
        i = np.minimum(np.searchsorted(b, a), len(b) - 1)
        return a[b[i] == a]
    return np.intersect1d(a, b, assume_unique=True)


class SubstringIndex:
    """Documents appended in id order; ``match(words)`` -> ids containing every word."""

    def __init__(self) -> None:
        self.n_docs = 0
        self._tok_id: dict[str, int] = {}
        self._tokens: list[str] = []
        self._new_tok: list[int] = []  # (token, doc) pairs since the last merge
        self._new_doc: list[int] = []
        self._base = (np.zeros(1, dtype=np.int64), _EMPTY)  # indptr, docs
        self._base_tok = _EMPTY  # token of each base posting (kept for merges)
        self._delta: tuple[np.ndarray, np.ndarray] | None = None
        # vocabulary chunks: (first token id, "\n".join(tokens) + "\n", start offsets)
        self._chunks: list[tuple[int, str, np.ndarray]] = []
        self._n_chunked = 0
        self._grams: dict[str, list[int]] = {}  # trigram -> ascending ids of the tokens holding it
        self._words: OrderedDict[str, tuple[int, np.ndarray]] = OrderedDict()
        self.tail: object = None  # the newest document's source object (rollback check)
        # word -> (n_docs when computed, sorted ids of the documents containing it)
        self._docs: OrderedDict[str, tuple[int, np.ndarray]] = OrderedDict()
        self._docs_size = 0

    # ------------------------------------------------------------------ building
    def add(self, texts: Iterable[str]) -> None:
        """Append documents (their ids continue from ``n_docs``)."""
        ids, tokens = self._tok_id, self._tokens
        new_tok, new_doc = self._new_tok, self._new_doc
        doc = self.n_docs
        for text in texts:
            for t in set(text.lower().split()) if text else ():
                k = ids.get(t)
                if k is None:
                    k = ids[t] = len(tokens)
                    tokens.append(t)
                new_tok.append(k)
                new_doc.append(doc)
            doc += 1
        self.n_docs = doc
        self._delta = None

    def _postings(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """(base CSR, delta CSR), merging the delta into the base once it is large."""
        if self._delta is None:
            tok = np.fromiter(self._new_tok, dtype=np.int64, count=len(self._new_tok))
            doc = np.fromiter(self._new_doc, dtype=np.int64, count=len(self._new_doc))
            if len(tok) * 4 > len(self._base_tok):
                tok = np.concatenate([self._base_tok, tok])
                order = np.argsort(tok, kind="stable")  # base docs precede the new ones
                self._base_tok = tok[order]
                indptr = np.zeros(len(self._tokens) + 1, dtype=np.int64)
                np.cumsum(np.bincount(tok, minlength=len(self._tokens)), out=indptr[1:])
                self._base = (indptr, np.concatenate([self._base[1], doc])[order])
                self._new_tok, self._new_doc = [], []
                tok, doc = _EMPTY, _EMPTY
                self._docs.clear()  # cached documents extend from the delta, now merged
                self._docs_size = 0
            self._delta = _csr(tok, doc, len(self._tokens))
        return self._base, self._delta

    def _sync_vocabulary(self) -> None:
        """Chunk the tokens added since the last query (so str.find can scan them)."""
        n = len(self._tokens)
        if n == self._n_chunked:
            return
        new = self._tokens[self._n_chunked :]
        grams = self._grams
        for k, t in enumerate(new, start=self._n_chunked):
            for g in {t[i : i + 3] for i in range(len(t) - 2)}:
                ids = grams.get(g)
                if ids is None:
                    grams[g] = [k]
                else:
                    ids.append(k)
        lens = np.fromiter((len(t) + 1 for t in new), dtype=np.int64, count=len(new))
        starts = np.concatenate([[0], np.cumsum(lens)])
        self._chunks.append((self._n_chunked, "\n".join(new) + "\n", starts))
        self._n_chunked = n
        if len(self._chunks) > _CHUNK_MERGE:
            first = self._chunks[0][0]
            text = "".join(c[1] for c in self._chunks)
            parts, shift = [], 0
            for _, s, st in self._chunks:
                parts.append(st[:-1] + shift)
                shift += len(s)
            self._chunks = [(first, text, np.concatenate(parts + [np.array([shift])]))]

    # ------------------------------------------------------------------ queries
    def _tokens_containing(self, word: str) -> np.ndarray:
        """Sorted ids of the vocabulary tokens that contain `word` (cached per word)."""
        cached = self._words.get(word)
        done, found = cached if cached is not None else (0, _EMPTY)
        if done < self._n_chunked and len(word) >= 3:
            # a token holding the word holds each of its trigrams: check the rarest one's tokens
            lists = [self._grams.get(word[i : i + 3]) for i in range(len(word) - 2)]
            rarest = None if None in lists else min(lists, key=len)
            if rarest is None or len(rarest) - bisect_left(rarest, done) <= (self._n_chunked - done) // 8:
                tokens = self._tokens
                hits = [] if rarest is None else [k for k in rarest[bisect_left(rarest, done) :] if word in tokens[k]]
                found = np.concatenate([found, np.asarray(hits, dtype=np.int64)]) if hits else found
                done = self._n_chunked
        if done < self._n_chunked:  # short or unselective words: scan the vocabulary text
            more = []
            for first, s, starts in self._chunks:
                last = first + len(starts) - 1
                if last <= done:
                    continue
                pos = int(starts[done - first]) if done > first else 0
                hits = []
                find = s.find
                while True:
                    j = find(word, pos)
                    if j < 0:
                        break
                    hits.append(j)
                    pos = find("\n", j + len(word)) + 1  # on to the next token
                if hits:
                    more.append(np.searchsorted(starts, np.asarray(hits, dtype=np.int64), side="right") - 1 + first)
            found = np.concatenate([found, *more]) if more else found
            done = self._n_chunked
        self._words[word] = (done, found)
        self._words.move_to_end(word)
        if len(self._words) > _WORD_CACHE:
            self._words.popitem(last=False)
        return found

    def _docs_containing(self, word: str) -> np.ndarray:
        """Sorted ids of the documents holding `word`; cached per word, extended with the
        documents added since from the delta postings (the cache empties at each merge)."""
        (bi, bd), (di, dd) = self._postings()
        cached = self._docs.pop(word, None)
        toks = self._tokens_containing(word)
        if cached is None:
            docs = np.concatenate([_gather(bi, bd, toks), _gather(di, dd, toks)])
            docs = docs if len(toks) <= 1 else np.unique(docs)
        else:
            self._docs_size -= len(cached[1])
            docs = cached[1]
            if cached[0] < self.n_docs:
                new = _gather(di, dd, toks)
                new = new[new >= cached[0]]
                docs = np.concatenate([docs, new if len(toks) <= 1 else np.unique(new)])
        if len(docs) <= _DOC_CACHE_BUDGET // 4:
            self._docs[word] = (self.n_docs, docs)
            self._docs_size += len(docs)
            while self._docs_size > _DOC_CACHE_BUDGET:
                self._docs_size -= len(self._docs.popitem(last=False)[1][1])
        return docs

    def match(self, words: list[str]) -> np.ndarray:
        """Sorted ids of the documents whose lowercased text contains every word (each word
        lowercase and free of whitespace, as ``query.lower().split()`` gives them)."""
        if not words:
            return _EMPTY
        self._sync_vocabulary()
        sets = []
        for w in dict.fromkeys(words):
            docs = self._docs_containing(w)
            if not len(docs):
                return _EMPTY
            sets.append(docs)
        sets.sort(key=len)
        out = sets[0]
        for s in sets[1:]:
            out = _intersect(out, s)
        return out


# ---------------------------------------------------------------------- platform glue
def _post_texts(pf, lo: int, hi: int) -> Iterable[str]:
    kinds = pf.p_kind.a[lo:hi].tolist()
    return ("" if kind == REPOST else pf._post_text(p) for p, kind in zip(range(lo, hi), kinds))  # reposts never match


def post_index(pf) -> SubstringIndex:
    """The platform's post index, synced to its posts (created lazily, kept on the platform)."""
    idx: SubstringIndex | None = pf.__dict__.get("_post_search_index")
    n = pf.n_posts
    if idx is not None and (n < idx.n_docs or (idx.n_docs and pf.p_content[idx.n_docs - 1] is not idx.tail)):
        idx = None  # posts were rolled back: rebuild
    if idx is None:
        idx = pf.__dict__["_post_search_index"] = SubstringIndex()
    if n > idx.n_docs:
        idx.add(_post_texts(pf, idx.n_docs, n))
        idx.tail = pf.p_content[n - 1]
    return idx


def top_visible_posts(pf, viewer: int, cand: np.ndarray, k: int) -> np.ndarray:
    """The k visible posts of `cand` with the highest engagement score, ties to the newest:
    exactly ``cand[visible][lexsort((-cand, -score))][:k]``, but for many candidates the best
    ones are picked first (argpartition on one int64 key) and visibility is checked on those
    only, widening the head until k are visible."""
    t = k + _RANK_HEAD
    if len(cand) > 4 * t:
        score = (
            pf.p_likes.a[cand].astype(np.int64) + pf.p_shares.a[cand] + pf.p_comments.a[cand] - pf.p_dislikes.a[cand]
        )
        key = score * (pf.n_posts + 1) + cand  # larger = better: score, then id
        while t < len(cand):
            head = np.argpartition(-key, t - 1)[:t]
            head = head[np.argsort(-key[head])]
            ids = cand[head]
            ids = ids[pf.visible_posts_mask(viewer, ids)]
            if len(ids) >= k:
                return ids[:k]
            t *= 4
    cand = cand[pf.visible_posts_mask(viewer, cand)]
    score = pf.p_likes.a[cand] + pf.p_shares.a[cand] + pf.p_comments.a[cand] - pf.p_dislikes.a[cand]
    return cand[np.lexsort((-cand, -score))[:k]]


def user_index(pf) -> SubstringIndex:
    """The platform's user index (user name, name and bio), synced to its users."""
    idx: SubstringIndex | None = pf.__dict__.get("_user_search_index")
    n = pf.n_users
    if idx is None or n < idx.n_docs:
        idx = pf.__dict__["_user_search_index"] = SubstringIndex()
    if n > idx.n_docs:
        ids = list(range(idx.n_docs, n))
        idx.add(f"{a} {b} {c}" for a, b, c in zip(pf.u_user_name.take(ids), pf.u_name.take(ids), pf.u_bio.take(ids)))
    return idx
