"""A noisy, delayed, budgeted fact-check service for the moderator (MOSAIC-style).

The moderator never reads a post's true label. What it can learn from is the platform's
own evidence (reports, spread, the author's history) and this service: at the start of
every step it sends up to `budget` posts of the moderator's current view to fact-checkers
(those not yet checked, most reported first, then fastest spreading); each verdict comes
back `delay` steps later and is wrong with probability `error`. A verdict is a function of
(episode seed, post id) only, so an episode replays exactly and a post checked twice would
get the same verdict.

Per post the service exposes `verdict` (+1 misinformation, -1 true, 0 none yet) and
`pending` (sent, verdict not back); per author the number of their posts whose verdict
came back as misinformation (`author_flags`).
"""

from __future__ import annotations

import numpy as np

from .platform import MISINFO_LABEL


class FactChecker:
    """Budgeted fact-checks with delay and error (see the module docstring)."""

    def __init__(self, budget: int = 2, delay: int = 2, error: float = 0.1):
        if budget < 0 or delay < 0 or not 0.0 <= error <= 1.0:
            raise ValueError(
                f"fact-check budget and delay must be >= 0 and error in [0, 1], got {budget}, {delay}, {error}"
            )
        self.budget, self.delay, self.error = int(budget), int(delay), float(error)
        self._platform = None
        self.clear(0)

    def clear(self, seed: int | None) -> None:
        self.seed = 0 if seed is None else int(seed)
        self.sent_step: dict[int, int] = {}  # post -> step it was sent
        self.verdicts = np.zeros(0, np.int8)  # per post: +1 misinfo, -1 true, 0 none
        self.author_flags = np.zeros(0, np.int32)

    def sync(self, sim) -> None:
        """Start over when the simulation was reset (a new platform object or step 0)."""
        pf = sim.platform
        if pf is not self._platform:  # every reset builds a new Platform
            self._platform = pf
            self.clear(sim.seed)
        if len(self.verdicts) < pf.n_posts:
            self.verdicts = np.concatenate([self.verdicts, np.zeros(pf.n_posts - len(self.verdicts), np.int8)])
        if len(self.author_flags) < pf.n_users:
            self.author_flags = np.concatenate(
                [self.author_flags, np.zeros(pf.n_users - len(self.author_flags), np.int32)]
            )

    def _verdict(self, post: int, label: int) -> int:
        wrong = np.random.default_rng([self.seed, int(post), 0xFAC7]).random() < self.error
        is_misinfo = (label == MISINFO_LABEL) != wrong
        return 1 if is_misinfo else -1

    def deliver(self, sim) -> None:
        """Hand back the verdicts whose delay has passed."""
        pf = sim.platform
        due = [p for p, s in self.sent_step.items() if s + self.delay <= pf.step and self.verdicts[p] == 0]
        for p in due:
            v = self._verdict(p, int(pf.p_label.a[p]))
            self.verdicts[p] = v
            if v > 0:
                self.author_flags[pf.p_author.a[p]] += 1

    def send(self, sim, view: np.ndarray, reports: np.ndarray) -> None:
        """Send up to `budget` unchecked posts of the view (most reported first; the view is
        ordered by velocity, which breaks ties)."""
        if not self.budget:
            return
        ok = np.flatnonzero(view >= 0)
        ok = ok[[int(view[i]) not in self.sent_step for i in ok]]
        order = ok[np.argsort(-reports[ok], kind="stable")][: self.budget]
        for i in order:
            self.sent_step[int(view[i])] = int(sim.platform.step)
        if self.delay == 0:
            self.deliver(sim)

    def pending(self, posts: np.ndarray) -> np.ndarray:
        return np.array([int(p) in self.sent_step and self.verdicts[p] == 0 for p in posts], dtype=np.float32)
