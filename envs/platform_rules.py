"""Fixed platform rules: baselines, and "the other agent" of each single-agent env.

A rule is a callable `rule(sim) -> action` for one platform agent (`moderator_0` or
`recommender_0`), the same action format the learner's policy gives:

- `NoModeration`: every slot "none".
- `ReportThresholdModerator(threshold, action)`: act on every observed post with at least
  `threshold` reports (default: remove at 3 reports): `threshold_rule` over the v0 moderator's view.
- `OracleModerator`: reads the true labels and removes (and with action 4 suspends the
  authors of) every visible misinformation post on the platform: the upper bound, not a
  baseline (see its docstring for why it cannot be beaten on exposure).
- `FixedWeights(weights)`: constant ranking weights for the agent-controlled recsys.

`threshold_rule` is the one report-threshold rule of both paths: what to remove, suspend and
send to fact-checkers given one view's report counts and thresholds, K views at once. Each view
supplies its features and turns the masks into its own codes: `ReportThresholdModerator` (the
v0 moderator's slots, the platform's report counts) and `train.tuned_baselines.queue_rule`
(Moderator-v1's review queue, its observation's features, with fact-check verdicts and repeat
authors; tuned by `tune_rules`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from oasis_gym.agents import PostActions
from oasis_gym.model.ranking import V0_DEFAULT_WEIGHTS
from oasis_gym.platform import MISINFO_LABEL, REMOVED, REPOST

__all__ = ["threshold_rule", "NoModeration", "ReportThresholdModerator", "OracleModerator", "FixedWeights"]


def threshold_rule(
    reports: np.ndarray,
    filled: np.ndarray,
    remove_at: np.ndarray,
    suspend_at: np.ndarray | None = None,
    check_at: np.ndarray | None = None,
    found: np.ndarray | None = None,
    cleared: np.ndarray | None = None,
    repeat: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The report-threshold rule over K views of Q slots: masks (remove, suspend, check), each (K, Q).

    `reports` (K, Q) report counts, `filled` (K, Q) the slots that hold a post; thresholds per
    view (K,): remove posts with >= `remove_at` reports or found misinformation (never one a
    fact-check `cleared`); also suspend the author where the post has >= `suspend_at` reports
    or was found misinformation, and the author is a `repeat` one (moderated before) or the
    post was found (None: never suspend); send unchecked posts with >= `check_at` reports that
    are not removed to the fact-checkers (None: no checks). `found` / `cleared` (K, Q): the
    fact-checks' verdicts as the view shows them (None: no verdicts); `repeat` None: every
    author counts as a repeat one."""
    none = np.zeros(np.shape(reports), bool)
    found = none if found is None else found
    cleared = none if cleared is None else cleared
    repeat = ~none if repeat is None else repeat
    remove = filled & ((reports >= np.asarray(remove_at)[:, None]) | found) & ~cleared
    suspend = none
    if suspend_at is not None:
        suspend = remove & (repeat | found) & ((reports >= np.asarray(suspend_at)[:, None]) | found)
    check = none
    if check_at is not None:
        check = filled & ~found & ~cleared & ~remove & (reports >= np.asarray(check_at)[:, None])
    return remove, suspend, check


class NoModeration:
    """Moderator baseline: never act."""

    name = "none"

    def __call__(self, sim) -> np.ndarray:
        """All-zero moderator action ("none" in every slot)."""
        return np.zeros(sim.platform_agents["moderator_0"].top_m, dtype=np.int64)


@dataclass
class ReportThresholdModerator:
    """Act (`action`: 1 label, 2 downrank, 3 remove, 4 remove + suspend) on every post of the
    moderator's current view with at least `threshold` reports."""

    threshold: int = 3
    action: int = 3
    name: str = "report_threshold"

    def __call__(self, sim) -> np.ndarray:
        """The action for every slot of the moderator's current view."""
        slots = sim.platform_agents["moderator_0"].slots
        ok = slots >= 0
        reports = np.zeros(len(slots), np.int64)
        reports[ok] = sim.platform.p_reports.a[slots[ok]]
        act, _, _ = threshold_rule(reports[None], ok[None], np.array([self.threshold]))
        return np.where(act[0], self.action, 0).astype(np.int64)


@dataclass
class OracleModerator:
    """Reads the ground truth and acts (`action` 3 remove, 4 remove + suspend) on *every*
    visible misinformation post of the platform, not only the moderator's `top_m` view,
    through the privileged `PostActions`. With action 4 (`oracle_suspend`, the stated upper
    bound) it also suspends the scenario's misinformation source accounts at its first step.

    Why `OracleModerator(4)` cannot be beaten: all moderators act at the same moment of a
    step (before the users), the feeds served at reset are the same for all, and after its
    first action no misinformation is visible (users cannot quote or repost a removed post)
    and no source can post any: every later feed is free of misinformation, so its
    per-step rewards are all 0, the maximum (-misinfo share - action costs <= 0), and it
    acts on no true post. `train.evaluate.oracle_check` verifies this on every evaluation.
    `OracleModerator(3)` (remove only, view-independent) is a reference, not a bound."""

    action: int = 3
    name: str = "oracle"

    def __call__(self, sim):
        """`PostActions` on every visible misinformation post (and, with action 4, its sources)."""

        pf = sim.platform
        n = pf.n_posts
        posts = np.flatnonzero(
            (pf.p_label.a[:n] == MISINFO_LABEL) & (pf.p_status.a[:n] != REMOVED) & (pf.p_kind.a[:n] != REPOST)
        )
        sources = None
        if self.action == 4:
            # the misinformation sources of a scenario's news stream (a step hook exposing them)
            streams = [h.misinfo_accounts for h in sim.step_hooks if hasattr(h, "misinfo_accounts")]
            sources = np.concatenate(streams) if streams else np.empty(0, np.int64)
            sources = sources[~pf.u_suspended.a[sources]]
        return PostActions(posts, np.full(len(posts), self.action, np.int64), sources)


@dataclass
class FixedWeights:
    """Recommender rule for the agent-controlled recsys: the same weights every step."""

    weights: tuple[float, ...] | None = None  # None: the recsys's V0_DEFAULT_WEIGHTS
    name: str = "fixed_weights"

    def __call__(self, sim) -> np.ndarray:
        """The recommender action of these weights (the raw weight vector without `recommender_0`)."""

        w = np.asarray(self.weights if self.weights is not None else V0_DEFAULT_WEIGHTS, dtype=np.float32)
        agent = sim.platform_agents.get("recommender_0")
        return agent.weights_action(w) if agent is not None and w.ndim == 1 else w.reshape(-1)
