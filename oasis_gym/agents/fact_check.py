"""A noisy, delayed, budgeted fact-check service for the moderator (MOSAIC-style).

The moderator never reads a post's true label. What it can learn from is the platform's
own evidence (reports, spread, the author's history) and this service: at the start of
every step up to `budget` posts of the moderator's current view go to fact-checkers: by
default those the moderator's action asks for (`check_action`, `request`), otherwise
(`check_action=False`) the service picks them (not yet checked, most reported first, then
fastest spreading); each verdict comes
back `delay` steps later and is wrong with probability `error`. A verdict is a function of
(episode seed, post id) only, so an episode replays exactly and a post checked twice would
get the same verdict.

Per post the service exposes `verdict` (+1 misinformation, -1 true, 0 none yet) and
`pending` (sent, verdict not back); per author the number of their posts whose verdict
came back as misinformation (`author_flags`).

Resume: the moderator registers `state_dict` as a state provider of the Simulation, so the
service's state (sent checks and their steps, verdicts back, author flags, the seed its
error draws come from) is saved in the journal's meta with every step; a resumed run loads
it (`sync`) before its first observation and continues as the uninterrupted run would.

The service's rules are the model's (`model/fact_check.py`: `select_checks`, `checks_due`,
`v0_verdicts`), called with Moderator-v0's parameters and its own draws; this class keeps the
platform's side: which posts were sent when, the state in the journal, the authors' flags.
"""

from __future__ import annotations

import numpy as np

from ..model.fact_check import NO_VERDICT, VERDICT_MISINFO, checks_due, select_checks, v0_verdicts
from ..platform import MISINFO_LABEL
from ..sim.agent_protocol import AgentView

# key of the service's state in the Simulation's saved state (journal meta "state")
STATE_KEY = "moderator_0.fact_check"


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
        """Forget every check: the state at the start of an episode with this seed."""
        self.seed = 0 if seed is None else int(seed)
        self.sent_step: dict[int, int] = {}  # post -> step it was sent
        self.verdicts = np.zeros(0, np.int8)  # per post: model.fact_check's verdict (0: none yet)
        self.author_flags = np.zeros(0, np.int32)

    def copy(self) -> FactChecker:
        """An independent copy (the moderator works on one per step, so a failed step's
        rollback gets the service back as it was)."""
        new = object.__new__(FactChecker)
        new.__dict__.update(self.__dict__)
        new.sent_step = dict(self.sent_step)
        new.verdicts, new.author_flags = self.verdicts.copy(), self.author_flags.copy()
        return new

    def sync(self, view: AgentView) -> None:
        """Follow the simulation to a new platform: every reset and resume builds one. After
        a reset the service starts over; after a resume it loads the state saved with the
        journal's last step (`AgentView.saved_state`, read once)."""
        pf = view.platform
        if pf is not self._platform:
            self._platform = pf
            saved = view.saved_state or {}
            if STATE_KEY in saved and saved is not getattr(self, "_loaded", None):
                self._loaded = saved  # a later reset of the same simulation starts over
                self.load_state_dict(saved[STATE_KEY])
            else:
                self.clear(view.seed)
        if len(self.verdicts) < pf.n_posts:
            self.verdicts = np.concatenate([self.verdicts, np.zeros(pf.n_posts - len(self.verdicts), np.int8)])
        if len(self.author_flags) < pf.n_users:
            self.author_flags = np.concatenate(
                [self.author_flags, np.zeros(pf.n_users - len(self.author_flags), np.int32)]
            )

    def _verdicts(self, posts: np.ndarray, misinfo: np.ndarray) -> np.ndarray:
        """The verdicts on `posts` whose truth is `misinfo`: one draw per (episode seed, post)."""
        u = np.array([np.random.default_rng([self.seed, int(p), 0xFAC7]).random() for p in posts])
        return v0_verdicts(misinfo, u, self.error)

    def _sent(self, posts: np.ndarray) -> np.ndarray:
        return np.array([int(p) in self.sent_step for p in posts], dtype=bool)

    def deliver(self, view: AgentView) -> None:
        """Hand back the verdicts whose delay has passed."""
        if not self.sent_step:
            return
        pf = view.platform
        posts = np.fromiter(self.sent_step, np.int64, len(self.sent_step))
        sent = np.fromiter(self.sent_step.values(), np.int64, len(self.sent_step))
        back = posts[checks_due(sent, pf.step, self.delay) & (self.verdicts[posts] == NO_VERDICT)]
        if len(back):
            v = self._verdicts(back, pf.p_label.a[back] == MISINFO_LABEL)
            self.verdicts[back] = v
            np.add.at(self.author_flags, pf.p_author.a[back[v == VERDICT_MISINFO]], 1)

    def _send(self, view: AgentView, posts: np.ndarray) -> None:
        for p in posts:
            self.sent_step[int(p)] = int(view.platform.step)

    def send(self, view: AgentView, slots: np.ndarray, reports: np.ndarray) -> None:
        """Send up to `budget` unchecked posts of the moderator's view `slots` (most reported
        first; the view is ordered by velocity, which breaks ties)."""
        if not self.budget:
            return
        slots = slots[np.argsort(-reports, kind="stable")]
        self._send(view, slots[select_checks(slots >= 0, self._sent(slots), self.budget)])
        if self.delay == 0:
            self.deliver(view)

    def request(self, view: AgentView, posts: np.ndarray) -> None:
        """Send the moderator's chosen posts (`check_action`): the first `budget` of them not
        sent before, in the given order; the rest of the request is ignored."""
        posts = np.asarray(posts, dtype=np.int64).reshape(-1)
        new = posts[select_checks(np.ones(len(posts), bool), self._sent(posts), self.budget)]
        self._send(view, new)
        if len(new) and self.delay == 0:
            self.deliver(view)

    def pending(self, posts: np.ndarray) -> np.ndarray:
        """1.0 where a post was sent and its verdict is not back yet, else 0.0."""
        return np.array([int(p) in self.sent_step and self.verdicts[p] == NO_VERDICT for p in posts], dtype=np.float32)

    def state_dict(self, view: AgentView) -> dict:
        """The service's state as JSON values (saved in the journal's meta every step):
        the seed of the error draws, every sent check with its step, the verdicts back and
        the authors' flags (non-zero entries only)."""
        self.sync(view)  # right after a reset the state is the new episode's, not the last one's
        v, f = np.flatnonzero(self.verdicts), np.flatnonzero(self.author_flags)
        return {
            "seed": self.seed,
            "sent": sorted([int(p), int(s)] for p, s in self.sent_step.items()),
            "verdicts": [v.tolist(), self.verdicts[v].tolist()],
            "author_flags": [f.tolist(), self.author_flags[f].tolist()],
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from `state_dict`'s output (sized to the current platform by `sync`)."""
        self.clear(state["seed"])
        self.sent_step = {int(p): int(s) for p, s in state["sent"]}
        for name, dtype in (("verdicts", np.int8), ("author_flags", np.int32)):
            idx, val = (np.asarray(x, dtype=np.int64) for x in state[name])
            arr = np.zeros(int(idx.max()) + 1 if len(idx) else 0, dtype)
            arr[idx] = val
            setattr(self, name, arr)
