"""Content-aware sharing: users decide from what a post says and who posted it, never from
its truth label or a stance written into the config.

For every post in an active user's feed, with r the post's cascade root (a repost shares its
root), the user reposts it with probability

    q = base_share * moral_emotional_irr ** m_r
                   * exp(novelty_weight * (novelty_ur - 1))
                   * exp(credibility_weight * (credibility_r - 0.5))

clipped to [0, 1], the slots triggering independently (independent cascade; one repost per
step, drawn uniformly among the triggered slots). The features:

* m_r: moral-emotional words in the root's text, counted with MORAL_EMOTIONAL below, a small
  hand-written word list in the spirit of Brady et al.'s moral-emotional dictionary (not
  their dictionary). Brady, Wills, Jost, Tucker & Van Bavel (2017, PNAS 114:7313): each
  additional moral-emotional word in a tweet increased its diffusion by about 20%, the
  default moral_emotional_irr = 1.2.
* novelty_ur in [0, 1]: the share of the root's content words the user has NOT been served
  before (in any post of any earlier feed), over a 256-bit hashed word signature per user
  (hash collisions make it a slight underestimate). A repeated exposure has novelty ~0.
  Vosoughi, Roy & Aral (2018, Science 359:1146) found false rumours more novel than the
  truth relative to what users had seen; they give no per-unit effect on sharing, so
  novelty_weight is set by hand (sweep it).
* credibility_r in [0, 1]: log(1 + followers) of the root's author over the log of the
  largest follower count. credibility_weight is set by hand, 0 by default (no effect).

Whether rumours outrun news is then an outcome of the texts and the network, not an input.
"""

from __future__ import annotations

import base64
import re
import zlib
from dataclasses import dataclass

import numpy as np

from oasis_gym.actions import ActionType as A
from oasis_gym.platform import REPOST
from oasis_gym.sim import FEED_INDEX, ActionArrays, ObsBatch

from .abm import ABMPolicy
from .diffusion import independent_cascade

__all__ = ["ContentParams", "ContentAwareABM", "MORAL_EMOTIONAL", "moral_emotional_count", "word_signature"]

# word stems (prefix match) both moral and emotional: outrage, disgust, blame, harm, purity ...
MORAL_EMOTIONAL = (
    "abus",
    "betray",
    "blame",
    "brave",
    "cheat",
    "corrupt",
    "cruel",
    "crim",
    "danger",
    "destroy",
    "disgrac",
    "disgust",
    "evil",
    "exploit",
    "fraud",
    "furious",
    "greed",
    "guilt",
    "harm",
    "hate",
    "hatred",
    "hero",
    "honor",
    "honour",
    "horrif",
    "hostil",
    "injustic",
    "insult",
    "kill",
    "liar",
    "lie",
    "lying",
    "love",
    "loyal",
    "murder",
    "outrag",
    "punish",
    "rage",
    "scandal",
    "shame",
    "shameful",
    "sin",
    "steal",
    "stole",
    "terribl",
    "terror",
    "threat",
    "traitor",
    "victim",
    "wicked",
    "wrong",
)
_STOP = frozenset(
    "a an and are as at be been but by do does for from has have he her his i in is it its "
    "last me more my new next not now of on or our so that the their them they this to too "
    "us was we were what when will with you your".split()
)
_WORD = re.compile(r"[a-z][a-z'-]*")
SIG_WORDS = 4  # 4 x 64 = 256-bit signatures


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOP]


def moral_emotional_count(text: str) -> int:
    """Words of `text` starting with a MORAL_EMOTIONAL stem (whole-word 'sin'/'lie' only)."""
    n = 0
    for w in _WORD.findall(text.lower()):
        if any(w.startswith(s) and (len(s) > 3 or w == s or w == s + "s") for s in MORAL_EMOTIONAL):
            n += 1
    return n


def word_signature(text: str) -> np.ndarray:
    """(SIG_WORDS,) uint64: one bit per content word, by a stable hash (crc32)."""
    sig = np.zeros(SIG_WORDS, np.uint64)
    for w in set(_words(text)):
        h = zlib.crc32(w.encode()) % (64 * SIG_WORDS)
        sig[h // 64] |= np.uint64(1) << np.uint64(h % 64)
    return sig


def _popcount(x: np.ndarray) -> np.ndarray:
    """Set bits per row of a (..., SIG_WORDS) uint64 array."""
    return np.unpackbits(x.view(np.uint8), axis=-1).sum(-1)


@dataclass
class ContentParams:
    """How content drives sharing: base rate, moral-emotional boost, novelty and credibility weights."""

    base_share: float = 0.05  # P(repost) of a novel post with no moral-emotional word (hand-set)
    moral_emotional_irr: float = 1.2  # Brady et al. 2017: x1.2 diffusion per moral-emotional word
    novelty_weight: float = 1.0  # log-odds-like weight of novelty (hand-set)
    credibility_weight: float = 0.0  # weight of the author's credibility (hand-set, off)

    def __post_init__(self) -> None:
        if not 0 <= self.base_share <= 1:
            raise ValueError("base_share must be in [0, 1]")
        if self.moral_emotional_irr <= 0:
            raise ValueError("moral_emotional_irr must be > 0")


class ContentAwareABM(ABMPolicy):
    """ABM users in content-aware diffusion mode (see the module docstring)."""

    name = "abm"

    def __init__(self, config=None, content: ContentParams | None = None, **overrides):
        super().__init__(config, **overrides)
        self.content = content or ContentParams()

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Seed the policy; nothing is seen yet."""
        super().reset(env, users, seed)
        self.seen = np.zeros((0, SIG_WORDS), np.uint64)  # per user: words served so far
        self._feat: dict[int, tuple[np.ndarray, int]] = {}  # root -> (signature, moral-emotional words)

    def _root_features(self, pf, roots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        uniq, inv = np.unique(roots, return_inverse=True)
        for r in uniq.tolist():  # distinct roots in this step's feeds (few), each once per run
            if r not in self._feat:
                text = pf.p_content[r]
                self._feat[r] = (word_signature(text), moral_emotional_count(text))
        sig = np.stack([self._feat[r][0] for r in uniq.tolist()]) if len(uniq) else np.zeros((0, SIG_WORDS), np.uint64)
        moral = np.array([self._feat[r][1] for r in uniq.tolist()], np.float64)
        return sig[inv], moral[inv]

    def _diffuse(self, sim, obs: ObsBatch, has: np.ndarray, rng) -> ActionArrays:
        if self.config.diffusion != "content_aware":
            return super()._diffuse(sim, obs, has, rng)
        pf, c = sim.platform, self.content
        users = obs.users
        if self.seen.shape[0] < pf.n_users:
            self.seen = np.pad(self.seen, ((0, pf.n_users - self.seen.shape[0]), (0, 0)))
        rows, slots = np.nonzero(has)
        post = obs.post_ids[rows, slots]
        root = np.where(pf.p_kind.a[post] == REPOST, pf.p_root.a[post], post)
        root = np.where(root >= 0, root, post)
        sig, moral = self._root_features(pf, root)
        seen = self.seen[users[rows]]
        words = _popcount(sig).astype(np.float64)
        novelty = np.where(words > 0, _popcount(sig & ~seen) / np.maximum(words, 1), 0.0)
        fol = pf.u_followers.a
        top = np.log1p(float(fol.max())) if len(fol) else 0.0
        cred = np.log1p(fol[pf.p_author.a[root]].astype(np.float64)) / top if top > 0 else np.zeros(len(root))
        q = (
            c.base_share
            * c.moral_emotional_irr**moral
            * np.exp(c.novelty_weight * (novelty - 1.0))
            * np.exp(c.credibility_weight * (cred - 0.5))
        )
        p = np.zeros(has.shape, np.float64)
        p[rows, slots] = np.clip(q, 0.0, 1.0)
        fresh = has & (obs.feed[..., FEED_INDEX["reposted_by_me"]] == 0)
        slot = independent_cascade(rng, fresh, p)
        # everything served this step is now seen (after deciding: novelty is relative to before)
        served = np.zeros((len(users), SIG_WORDS), np.uint64)
        np.bitwise_or.at(served, rows, sig)
        self.seen[users] |= served
        action = np.where(slot >= 0, self.config.diffusion_action, A.DO_NOTHING).astype(np.int64)
        return ActionArrays(users, action, np.maximum(slot, 0))

    def state_dict(self) -> dict:
        """The ABM state and the words each user has seen (compressed)."""
        seen = getattr(self, "seen", np.zeros((0, SIG_WORDS), np.uint64))
        return {
            **super().state_dict(),
            "seen": base64.b64encode(zlib.compress(seen.tobytes())).decode(),
            "seen_users": int(seen.shape[0]),
        }

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` saved."""
        super().load_state_dict(state)
        if "seen" in state:
            raw = zlib.decompress(base64.b64decode(state["seen"]))
            self.seen = np.frombuffer(raw, np.uint64).reshape(int(state["seen_users"]), SIG_WORDS).copy()
        self._feat = {}
