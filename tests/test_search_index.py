"""The search index against a brute-force reference (the scan it replaced), on random posts.

Random posts (originals, reposts, quotes) over a small mixed-case, unicode vocabulary grow
in batches between queries (so the index's delta, merges and per-word caches are all
exercised); moderation (label, downrank, remove), suspensions, mutes and the scan limit vary.
Every query (random substrings of the texts, several words, absent words, odd case and
whitespace) must give exactly the reference's ranked result, for posts and for users.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_population

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import REMOVED, ActionBatch, Platform, PlatformConfig
from oasis_gym.platform.platform import DOWNRANKED, LABELLED, REPOST
from oasis_gym.platform.search_index import SubstringIndex

VOCAB = [
    "climate",
    "Climate",
    "CLIMATE-change",
    "economy",
    "econ",
    "vote",
    "votes",
    "élection",
    "Straße",
    "İstanbul",
    "ΟΔΟΣ",
    "οδός",
    "naïve",
    "café",
    "😀",
    "ab",
    "a",
    "b",
    "x-y",
    "100%",
    "'; DROP TABLE",
    "co-op",
    "coop",
    "the",
    "then",
    "theme",
    "\u00a0nbsp",
    "tab\there",
    "new\nline",
]


def brute_search_posts(pf: Platform, viewer: int, query: str, k: int) -> list[int]:
    """The pre-index implementation, verbatim in effect."""
    words = [w for w in str(query).lower().split() if w]
    if not words:
        return []
    lo = max(0, pf.n_posts - pf.config.search_scan_limit)
    hits = [
        p
        for p in range(lo, pf.n_posts)
        if pf.p_kind.a[p] != REPOST and all(w in pf._post_text(p).lower() for w in words)
    ]
    cand = np.asarray(hits, dtype=np.int64)
    cand = cand[pf.visible_posts_mask(viewer, cand)]
    score = pf.p_likes.a[cand] + pf.p_shares.a[cand] + pf.p_comments.a[cand] - pf.p_dislikes.a[cand]
    return cand[np.lexsort((-cand, -score))[:k]].tolist()


def brute_search_users(pf: Platform, viewer: int, query: str, k: int) -> list[int]:
    words = [w for w in str(query).lower().split() if w]
    if not words:
        return []
    hits = [
        u
        for u in range(pf.n_users)
        if u != viewer and all(w in f"{pf.u_user_name[u]} {pf.u_name[u]} {pf.u_bio[u]}".lower() for w in words)
    ]
    cand = np.asarray(hits, dtype=np.int64)
    cand = cand[~pf.muted_mask(viewer, cand)]
    return cand[np.lexsort((cand, -pf.u_followers.a[cand]))[:k]].tolist()


def _text(rng: np.random.Generator) -> str:
    n = int(rng.integers(1, 8))
    seps = [" ", "  ", "\t", "\n", " \u3000 ", ""]
    return "".join(
        VOCAB[int(i)] + seps[int(j)] for i, j in zip(rng.integers(0, len(VOCAB), n), rng.integers(0, len(seps), n))
    )


def _query(rng: np.random.Generator, pf: Platform) -> str:
    kind = int(rng.integers(0, 5))
    if kind == 0 and pf.n_posts:  # a substring of a post
        t = pf._post_text(int(rng.integers(0, pf.n_posts)))
        i = int(rng.integers(0, len(t)))
        return t[i : i + int(rng.integers(1, 12))]
    if kind == 1:
        return " ".join(VOCAB[int(i)] for i in rng.integers(0, len(VOCAB), int(rng.integers(1, 4))))
    if kind == 2:
        return VOCAB[int(rng.integers(0, len(VOCAB)))].upper() + "  "
    if kind == 3:
        return rng.choice(["zzz", "", "   ", "climate zzz", "E", "ß", "ss", "σ", "ς", "i̇", "-", "%"]).item()
    return f"u{int(rng.integers(0, 40))} name"


@pytest.mark.parametrize("seed,head", [(0, 64), (1, 64), (2, 0), (3, 1)])
def test_index_equals_brute_force(seed, head, monkeypatch):
    """head: how far beyond k the ranking looks before checking visibility (small values
    force the widening path on these small corpora)."""
    import oasis_gym.platform.search_index as si

    monkeypatch.setattr(si, "_RANK_HEAD", head)
    rng = np.random.default_rng(seed)
    n_users = 40
    pf = Platform(PlatformConfig(search_scan_limit=int(rng.choice([10_000, 150]))))
    pop = make_population(n_users)
    pop.bio = [_text(rng) for _ in range(n_users)]
    pf.add_users(pop)
    for step in range(12):
        # a batch of new posts: originals, reposts and quotes of existing ones
        n = int(rng.integers(1, 60))
        rows = []
        for _ in range(n):
            u = int(rng.integers(0, n_users))
            r = rng.random()
            if r < 0.6 or pf.n_posts == 0:
                rows.append((u, A.CREATE_POST, None, _text(rng)))
            elif r < 0.8:
                rows.append((u, A.REPOST, int(rng.integers(0, pf.n_posts))))
            elif r < 0.9:
                rows.append((u, A.QUOTE_POST, int(rng.integers(0, pf.n_posts)), _text(rng)))
            else:
                rows.append((u, A.LIKE_POST, int(rng.integers(0, pf.n_posts))))
        pf.apply(ActionBatch.of(rows))
        if pf.n_posts:
            pf.moderate(rng.integers(0, pf.n_posts, 3), int(rng.choice([LABELLED, DOWNRANKED, REMOVED])))
        pf.apply(
            ActionBatch.of(
                [
                    (int(rng.integers(0, n_users)), A.MUTE, int(rng.integers(0, n_users))),
                    (int(rng.integers(0, n_users)), A.FOLLOW, int(rng.integers(0, n_users))),
                ]
            )
        )
        if step == 6:
            pf.suspend(np.array([3, 7]))
        pf.advance(3)
        for _ in range(40):
            viewer, q, k = int(rng.integers(0, n_users)), _query(rng, pf), int(rng.integers(1, 30))
            assert pf.search_posts(viewer, q, k).tolist() == brute_search_posts(pf, viewer, q, k), (step, q)
            assert pf.search_users(viewer, q, k).tolist() == brute_search_users(pf, viewer, q, k), (step, q)


def test_index_survives_a_rollback_and_a_restore(tmp_path):
    """Posts truncated (a rolled-back step) and a platform restored from its journal."""
    from oasis_gym.platform import Journal

    pf = Platform()
    pf.add_users(make_population(5))
    journal = Journal(str(tmp_path / "j.db"), pf)
    pf.apply(ActionBatch.of([(0, A.CREATE_POST, None, "alpha beta"), (1, A.CREATE_POST, None, "beta gamma")]))
    journal.commit_step(pf, advance_minutes=3)
    assert pf.search_posts(4, "beta").tolist() == [1, 0]
    # roll the post columns back by one post and write a different one in its place
    for col in (
        pf.p_author,
        pf.p_root,
        pf.p_kind,
        pf.p_minute,
        pf.p_step,
        pf.p_likes,
        pf.p_dislikes,
        pf.p_shares,
        pf.p_reports,
        pf.p_comments,
        pf.p_stance,
        pf.p_label,
        pf.p_status,
        pf.p_prev_by_author,
        pf.p_last_comment,
    ):
        col.n -= 1
    del pf.p_content[-1], pf.p_quote[-1]
    pf.create_posts(np.array([2]), ["delta beta"])
    assert pf.search_posts(4, "gamma").tolist() == [] and pf.search_posts(4, "delta").tolist() == [1]
    journal.close()
    restored = Platform.from_db(str(tmp_path / "j.db"))
    assert restored.search_posts(4, "beta").tolist() == brute_search_posts(restored, 4, "beta", 10) == [1, 0]
    assert restored.search_users(4, "u1").tolist() == [1]


def test_index_merges_and_caches_stay_exact():
    """Many small batches: deltas merge into the base, cached words extend over new tokens."""
    rng = np.random.default_rng(5)
    idx, texts = SubstringIndex(), []
    words = ["ab", "b", "abc", "zz", "q", "clim", "é"]
    for _ in range(60):
        batch = [
            "".join(rng.choice(list("abcqzé "), int(rng.integers(0, 12)))) for _ in range(int(rng.integers(0, 20)))
        ]
        idx.add(batch)
        texts += batch
        for w in words:
            expect = [i for i, t in enumerate(texts) if w in t.lower()]
            assert idx.match([w]).tolist() == expect
        pair = [w for w in rng.choice(words, 2)]
        assert idx.match(pair).tolist() == [i for i, t in enumerate(texts) if all(w in t.lower() for w in pair)]


def test_trigram_and_scan_paths_agree_with_brute_force():
    """A larger vocabulary (so rare trigrams take the trigram path, short and common words the
    scan), grown in batches; every answer equals the brute-force substring test."""
    rng = np.random.default_rng(9)
    letters = list("abcdefghijklmnopqrstuvwxyzäöü")
    vocab = ["".join(rng.choice(letters, int(n))) for n in rng.integers(2, 12, 3000)]
    idx, texts = SubstringIndex(), []
    for _ in range(6):
        batch = [" ".join(rng.choice(vocab, int(rng.integers(1, 10)))) for _ in range(300)]
        idx.add(batch)
        texts += batch
        lowered = [t.lower() for t in texts]
        for _ in range(60):
            t = vocab[int(rng.integers(0, len(vocab)))]
            i = int(rng.integers(0, len(t)))
            w = t[i : i + int(rng.integers(1, 7))]
            assert idx.match([w]).tolist() == [d for d, x in enumerate(lowered) if w in x], w
    assert idx._grams and idx._words  # both structures were used
