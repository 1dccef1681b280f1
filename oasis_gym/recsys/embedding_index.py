"""The per-episode embedding index: post vectors aligned with post ids, user vectors on demand.

`EmbeddingIndex` keeps one growing matrix of post vectors aligned with post ids (a repost
gets its root's vector; a quote embeds its own text plus the quoted text), embedding only
posts created since the last `sync`, and builds user vectors on demand from the profile
(bio text, interest topics) and the user's latest posts, caching the static
profile part so its cost scales with the users that are actually served.
"""

from __future__ import annotations

import numpy as np

from ..blas import matmul
from ..platform import REPOST
from ..platform.store import GrowArray, StagedGrowArray
from ..population import TOPICS
from .embed import Embedder, l2_normalize, make_embedder


def _topic_names() -> tuple[str, ...]:

    return TOPICS


def interest_bits(interests: np.ndarray, n_bits: int) -> np.ndarray:
    """(n, n_bits) float32 0/1 matrix of the set bits of uint64 interest masks."""
    shifts = np.arange(n_bits, dtype=np.uint64)
    return ((np.asarray(interests, dtype=np.uint64)[:, None] >> shifts) & np.uint64(1)).astype(np.float32)


class EmbeddingIndex:
    """Post vectors aligned with post ids (grown incrementally) and user vectors on demand.

    User vector = normalize(profile_weight * e(profile text) + topic_weight * e(topics)
    + recent_weight * mean(e(latest `n_recent` posts))), each term unit-length before
    weighting. The profile text is the bio (as in OASIS, which embeds only the bio); pass
    ``profile_fields=("bio", "persona")`` to add the persona (costs a string render per
    new user for lazy synthetic populations: about 10 µs each). The profile part (static)
    is cached per user, up to `user_cache_size` users, after which the cache starts over,
    bounding memory at 1M users.
    """

    def __init__(
        self,
        embedder: Embedder | str | None = None,
        n_recent: int = 3,
        profile_weight: float = 1.0,
        topic_weight: float = 1.0,
        recent_weight: float = 1.0,
        user_cache_size: int = 262_144,
        profile_fields: tuple[str, ...] = ("bio",),
    ):
        self.embedder = make_embedder(embedder)
        self.n_recent = n_recent
        self.profile_weight = profile_weight
        self.topic_weight = topic_weight
        self.recent_weight = recent_weight
        self.user_cache_size = user_cache_size
        self.profile_fields = profile_fields
        self.clear()

    @property
    def dim(self) -> int:
        """The embedding size."""
        return self.embedder.dim

    def clear(self) -> None:
        """Forget every post and user vector."""
        self._posts: GrowArray | None = None
        self._topics: np.ndarray | None = None
        self._user_row = np.empty(0, dtype=np.int64)
        self._user_vecs: GrowArray | None = None
        self._key_sorted = np.empty(0, np.uint64)  # profile vectors by key (`_keyed_profile_vectors`)
        self._key_row = np.empty(0, np.int64)
        self._key_vecs: GrowArray | None = None
        self._memo: tuple | None = None  # (platform id, n_posts, users, vectors) of the last call

    @property
    def n_posts(self) -> int:
        """The number of posts embedded so far."""
        return 0 if self._posts is None else len(self._posts)

    @property
    def post_matrix(self) -> np.ndarray:
        """(n embedded posts, dim) float32 view; row i is post i."""
        return self._posts.a if self._posts is not None else np.zeros((0, self.dim), np.float32)

    def reset(self, platform) -> None:
        """Forget everything and embed every existing post of `platform`."""
        self.clear()
        self.sync(platform)

    def sync(self, platform) -> np.ndarray:
        """Embed posts created since the last call; returns their ids."""
        if self._posts is None:
            self._posts = StagedGrowArray(np.float32, width=self.dim, capacity=max(1024, platform.n_posts))
        lo, hi = len(self._posts), platform.n_posts
        if hi <= lo:
            return np.empty(0, np.int64)
        ids = np.arange(lo, hi, dtype=np.int64)
        kind = platform.p_kind.a[lo:hi]
        vecs = np.zeros((hi - lo, self.dim), dtype=np.float32)
        own = np.flatnonzero(kind != REPOST)
        if len(own):
            vecs[own] = self.embedder.embed_texts([_post_text(platform, int(p)) for p in ids[own]])
        self._posts.extend(vecs)
        rep = ids[kind == REPOST]
        if len(rep):  # a root is always older than its reposts, so its row exists now
            self._posts.a[rep] = self._posts.a[platform.p_root.a[rep]]
        return ids

    def truncate(self, n_posts: int) -> None:
        """Forget the posts from `n_posts` on (a failed step's posts are rolled back)."""
        if self._posts is not None:
            self._posts.truncate(n_posts)
        self._memo = None

    def post_vectors(self, posts: np.ndarray) -> np.ndarray:
        """Vectors of post ids (any shape); -1 (padding) gives a zero vector."""
        posts = np.asarray(posts, dtype=np.int64)
        mat = self.post_matrix
        out = mat[np.maximum(posts, 0)] if len(mat) else np.zeros(posts.shape + (self.dim,), np.float32)
        out[posts < 0] = 0.0
        return out

    # ---------------------------------------------------------------- users
    def _topic_matrix(self) -> np.ndarray:
        if self._topics is None:
            self._topics = self.embedder.embed_texts(list(_topic_names()))
        return self._topics

    def _profile_vectors(self, platform, users: np.ndarray) -> np.ndarray:
        """Static profile part, computed for uncached users only."""
        keys = self._profile_keys(platform, users)
        if keys is not None:
            return self._keyed_profile_vectors(platform, users, keys)
        n = platform.n_users
        if len(self._user_row) < n:
            self._user_row = np.concatenate([self._user_row, np.full(n - len(self._user_row), -1, np.int64)])
        if self._user_vecs is None:
            self._user_vecs = GrowArray(np.float32, width=self.dim, capacity=max(1024, min(len(users), 1 << 16)))
        new = np.unique(users[self._user_row[users] < 0])
        if len(new):
            if len(self._user_vecs) + len(new) > self.user_cache_size:
                self._user_row[:] = -1
                self._user_vecs.n = 0
                new = np.unique(users)
            self._user_row[new] = self._user_vecs.extend(self._compute_profiles(platform, new))
        return self._user_vecs.a[self._user_row[users]]

    def _profile_keys(self, platform, users: np.ndarray) -> np.ndarray | None:
        """Where the profile texts are functions of the interest mask (a synthetic population's
        bios), the masks: users sharing one share their profile vector. Else None."""
        interests = platform.u_interests.a[users]
        for f in self.profile_fields:
            col = getattr(platform, f"u_{f}")
            keys = col.text_keys(users) if hasattr(col, "text_keys") else None
            if keys is None or not np.array_equal(keys, interests):
                return None
        return interests

    def _keyed_profile_vectors(self, platform, users: np.ndarray, keys: np.ndarray) -> np.ndarray:
        """Profile vectors cached by key (interest mask): computed once per distinct mask, for
        its first user here (bit for bit what that user's own computation gives)."""
        uniq, first = np.unique(keys, return_index=True)
        at = np.minimum(np.searchsorted(self._key_sorted, uniq), max(len(self._key_sorted) - 1, 0))
        known = (self._key_sorted[at] == uniq) if len(self._key_sorted) else np.zeros(len(uniq), bool)
        new = ~known
        if new.any():
            if len(self._key_sorted) + int(new.sum()) > self.user_cache_size:  # start over (bounded memory)
                self._key_sorted, self._key_row = np.empty(0, np.uint64), np.empty(0, np.int64)
                self._key_vecs = None
                new = np.ones(len(uniq), bool)
            if self._key_vecs is None:
                self._key_vecs = GrowArray(np.float32, width=self.dim, capacity=max(1024, int(new.sum())))
            rows = self._key_vecs.extend(self._compute_profiles(platform, users[first[new]]))
            merged = np.concatenate([self._key_sorted, uniq[new]])
            order = np.argsort(merged, kind="stable")
            self._key_sorted = merged[order]
            self._key_row = np.concatenate([self._key_row, rows])[order]
        row = self._key_row[np.searchsorted(self._key_sorted, keys)]
        return self._key_vecs.a[row]

    def _compute_profiles(self, platform, users: np.ndarray) -> np.ndarray:
        cols = [getattr(platform, f"u_{f}") for f in self.profile_fields]
        if len(cols) == 1 and hasattr(cols[0], "texts"):
            texts = [str(t or "") for t in cols[0].texts(users)]
        else:
            texts = [" ".join(str(c[u] or "") for c in cols) for u in users.tolist()]
        vec = self.profile_weight * self.embedder.embed_texts(texts)
        topics = self._topic_matrix()
        bits = interest_bits(platform.u_interests.a[users], len(topics))
        vec += self.topic_weight * l2_normalize(matmul(bits, topics))
        return vec

    def recent_post_ids(self, platform, users: np.ndarray) -> np.ndarray:
        """(len(users), n_recent) latest post ids of each user (newest first), -1 padded."""
        out = np.full((len(users), self.n_recent), -1, dtype=np.int64)
        if not platform.n_posts or not self.n_recent:
            return out
        cur = platform.u_last_post.a[users]
        prev = platform.p_prev_by_author.a
        for d in range(self.n_recent):
            out[:, d] = cur
            live = cur >= 0
            if not live.any():
                break
            cur = np.where(live, prev[np.maximum(cur, 0)], -1)
        return out

    def _recent_sum(self, recent: np.ndarray) -> np.ndarray:
        """Sum of the vectors of each row's posts (-1: none), the bits of
        ``post_vectors(recent).sum(axis=1)`` without its (users, n_recent, dim) temporary or
        a gathered row per missing post: column by column, added in the same order, and
        ``+ 0.0`` where a missing post was added before (which only turns -0.0 into 0.0)."""
        mat = self.post_matrix
        out = np.zeros((len(recent), self.dim), dtype=np.float32)
        for d in range(recent.shape[1]):
            rows = np.flatnonzero(recent[:, d] >= 0)
            if d == 0:
                out[rows] = mat[recent[rows, 0]]
            elif len(rows):
                out[rows] += mat[recent[rows, d]]
        if recent.shape[1] > 1:
            padded = np.flatnonzero((recent[:, 0] >= 0) & (recent[:, -1] < 0))  # (padding comes last)
            out[padded] += np.float32(0.0)
        return out

    def user_vectors(self, platform, users: np.ndarray) -> np.ndarray:
        """(len(users), dim) unit user vectors (see the class docstring)."""
        users = np.asarray(users, dtype=np.int64)
        if not len(users):
            return np.zeros((0, self.dim), np.float32)
        self.sync(platform)
        memo = self._memo  # recommend() then similarity() ask for the same users in one step
        if (
            memo is not None
            and memo[0] == id(platform)
            and memo[1] == platform.n_posts
            and np.array_equal(memo[2], users)
        ):
            return memo[3]
        vec = self._profile_vectors(platform, users)  # a gathered copy
        if self.recent_weight and self.n_recent:
            mean = l2_normalize(self._recent_sum(self.recent_post_ids(platform, users)), inplace=True)
            if self.recent_weight != 1:  # (x * 1.0 is x: skipped)
                mean *= self.recent_weight
            vec += mean
        vec = l2_normalize(vec, inplace=True)
        vec.flags.writeable = False
        self._memo = (id(platform), platform.n_posts, users.copy(), vec)
        return vec


def _post_text(platform, p: int) -> str:
    """What a post says: its text, and for a quote the quote text before the quoted one."""
    quote = platform.p_quote[p]
    text = platform.p_content[p] or ""
    return text if quote is None else f"{quote} {text}"
