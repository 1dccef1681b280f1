"""PPO on top of a tuned baseline: its action is a correction of the baseline's, not the whole action.

A policy network starts near "all actions zero", which in Recommender-v1 is a near-random
ranking far below the tuned constant, and in Moderator-v1 acts on posts at random: it then
spends most of its budget relearning what the black-box search already found. Anchored,
PPO starts *at* the tuned baseline and has to learn only what the baseline cannot do: act
on the state (the platform's signals, the time left). So "PPO beats the tuned baseline"
measures exactly the value of a state-dependent policy. The anchor is tuned on the tuning
seeds only, like the baselines, and its compute is stated beside PPO's.

- `ConstantAnchor(action)` (Box actions): env action = clip(anchor + a, low, high); a = 0 is the anchor.
- `RowAnchor(action, cols, shift=None)` (the recommender's per-user W): PPO corrects only W's
  global row (`cols` actions, one change of the ranking for every user: what a change of the
  platform's state asks for), the per-user rows stay as tuned; `shift(obs)` (K, cols), if
  given, is a tuned state-dependent change of that row (the campaign detector's) under PPO's.
- `RuleAnchor(rule_for, n_codes, slots, name)` (one code per slot; `rule_for(K)`: the rule for K
  episodes): PPO chooses per slot among n_codes + 1 codes, 0 = "what the rule says", c > 0 =
  code c - 1; the moderator's slot policy starts with code 0's logit `FIRST_LOGIT` higher.
- `NoAnchor`: the action as it is.

`train.sb3_vec_env.LockstepSB3VecEnv(..., anchor=)` applies an anchor at the bottom of SB3's
VecEnv stack (under VecNormalize: it sees the raw observations the rule reads);
`act(model, vec, anchor)` is the same policy for evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from gymnasium import spaces

FIRST_LOGIT = 3.0  # initial preference for "what the rule says": about 0.83 against 4 other codes


class NoAnchor:
    """PPO's action is the env's action."""

    name = "none"

    def space(self, env_space: spaces.Space) -> spaces.Space:
        """PPO's action space."""
        return env_space

    def env_action(self, action: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The env's actions (K, ...) of PPO's actions given the raw observations (K, obs)."""
        return action


class ConstantAnchor(NoAnchor):
    """PPO's action is added to a tuned constant action (clipped to the env's bounds)."""

    name = "tuned constant"

    def __init__(self, action: np.ndarray, low: float = -1.0, high: float = 1.0):
        self.action, self.low, self.high = np.asarray(action, np.float32), low, high

    def env_action(self, action: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """clip(anchor + action)."""
        return np.clip(self.action[None] + np.asarray(action, np.float32), self.low, self.high)


class RowAnchor(ConstantAnchor):
    """PPO's action (`cols` numbers) is added to the first row of a tuned per-user W (its
    global row: the same correction for every user), the other rows kept as tuned."""

    name = "tuned constant, global-row corrections"

    def __init__(self, action: np.ndarray, cols: int, low: float = -1.0, high: float = 1.0, shift=None, name=None):
        super().__init__(action, low, high)
        self.cols, self.shift, self.name = int(cols), shift, name or self.name

    def space(self, env_space: spaces.Space) -> spaces.Space:
        """One correction per candidate feature."""
        return spaces.Box(-1.0, 1.0, (self.cols,), np.float32)

    def env_action(self, action: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The anchor with clip(anchor's first row + action)."""
        out = np.tile(self.action, (len(action), 1))
        out[:, : self.cols] += np.asarray(action, np.float32)
        if self.shift is not None:
            out[:, : self.cols] += self.shift(obs)
        return np.clip(out, self.low, self.high)


class RuleAnchor(NoAnchor):
    """PPO's code 0 per slot defers to a tuned rule; code c > 0 is the env's code c - 1."""

    def __init__(self, rule_for: Callable[[int], Callable], n_codes: int, slots: int, name: str = "tuned rule"):
        self.rule_for, self.n_codes, self.slots, self.name = rule_for, int(n_codes), int(slots), name
        self._rules: dict[int, Callable] = {}  # the rule for K episodes, by K

    def space(self, env_space: spaces.Space) -> spaces.Space:
        """One more code per slot than the env: 0 = the rule's."""
        return spaces.MultiDiscrete([self.n_codes + 1] * self.slots)

    def env_action(self, action: np.ndarray, obs: np.ndarray) -> np.ndarray:
        """The rule's code where PPO says 0, PPO's code - 1 elsewhere."""
        action = np.asarray(action, np.int64)
        k = len(obs)
        if k not in self._rules:
            self._rules[k] = self.rule_for(k)
        return np.where(action == 0, self._rules[k](obs, 0), action - 1)


def act(model, vec_normalize, anchor: NoAnchor) -> Callable[[np.ndarray, int], np.ndarray]:
    """The trained policy as `act(obs, t) -> env actions` on raw observations (deterministic)."""

    def policy(obs: np.ndarray, t: int) -> np.ndarray:
        action = model.predict(vec_normalize.normalize_obs(obs), deterministic=True)[0]
        return anchor.env_action(action, obs)

    return policy
