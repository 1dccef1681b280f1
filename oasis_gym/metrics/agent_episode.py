"""TensorBoard curves of a platform agent's episode: a trained recommender or moderator on its
task's platform (`oasis-gym run --recommender RUN` / `--moderator RUN`, `cli/task_run.py`).

`AgentEpisodeRecorder(logdir, reward_weights, weight_names=... | code_names=...)` writes, at
each step `record(step, action, reward, info, llm_actions)` is called with (the env's step and
what it returned):

- the agent's action: the recommender's ranking weights, their mean over the user-feature rows
  per candidate feature (``agent/weight/<feature>``); the moderator's queue codes, how many of
  each (``agent/code/<code>``);
- the reward (``reward/total``, the return so far ``reward/return``) and its components
  (``reward/<term>``: its weight times the term in `info`; a term not in `info`, e.g. the
  moderator's false positives, is what is left of the reward once the others are taken off);
- the users: ``users/satisfaction``, ``users/churned``, ``users/visitors``, engagement
  (``engagement/per_user``), misinformation (``exposure/misinfo_impressions``,
  ``exposure/misinfo_share``), the opinions (``opinion/*``), and every other number of `info`
  (``task/<key>``), all per user as the task counts them;
- the LLM users' share of the users' actions (do_nothing apart), ``llm/action_share``, and
  their actions ``llm/actions``, when the caller counts them (`llm_actions`: (theirs, all)).

The satisfaction, churn and misinformation values are the task's hidden truth (the env's
``privileged_info=True``): a run is an observation of the agent, not its training. Nothing
here knows a task: the caller names the reward's weights, the weights' candidate features or
the codes. The dashboard's layout (`AGENT_CURVES`) groups the curves by what they show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .tensorboard import TensorBoardLogger, layout_of

__all__ = ["AgentEpisodeRecorder", "AGENT_CURVES", "INFO_TAGS"]

#: the tags of the task's info values (the rest: ``task/<key>``)
INFO_TAGS = {
    "satisfaction": "users/satisfaction",
    "churned": "users/churned",
    "visitors": "users/visitors",
    "engagements": "engagement/per_user",
    "misinfo_impressions": "exposure/misinfo_impressions",
    "misinfo_share": "exposure/misinfo_share",
    "opinion_std": "opinion/std",
    "polarization_increase": "opinion/std_increase",
}
_NOT_CURVES = ("episode_seed",)

#: the Custom Scalars layout of an agent's episode (`TensorBoardLogger.log_layout`)
AGENT_CURVES: dict[str, dict[str, list[str]]] = {
    "1 the agent's action": {
        "ranking weights, mean per candidate feature": [r"agent/weight/.*"],
        "moderation codes per step": [r"agent/code/.*"],
    },
    "2 reward": {"reward and its components": [r"reward/(?!return).*"], "return so far": [r"reward/return"]},
    "3 users": {
        "satisfaction": [r"users/satisfaction"],
        "churned and visiting shares": [r"users/(churned|visitors)"],
    },
    "4 engagement and misinformation": {
        "engagement per user": [r"engagement/.*"],
        "misinformation impressions": [r"exposure/.*"],
        "opinions": [r"opinion/.*"],
        "other task values": [r"task/.*"],
    },
    "5 LLM users": {"LLM users' share of the users' actions": [r"llm/action_share"], "their actions": [r"llm/actions"]},
}


class AgentEpisodeRecorder:
    """One episode of a platform agent, step by step, as TensorBoard scalars (module docstring).

    `reward_weights`: the reward's terms and signed weights (`RecommenderReward.weights()`);
    `weight_names`: the recommender's candidate features (the columns of its weights), or
    `code_names`: the moderator's codes, in code order; `config`: the run's settings, shown as
    text and in the HParams dashboard.
    """

    def __init__(
        self,
        logdir: str | Path,
        reward_weights: Mapping[str, float],
        *,
        weight_names: Sequence[str] | None = None,
        code_names: Sequence[str] | None = None,
        config: Mapping | None = None,
    ) -> None:
        if (weight_names is None) == (code_names is None):
            raise ValueError("give weight_names (a recommender) or code_names (a moderator)")
        self.reward_weights = dict(reward_weights)
        self.weight_names = None if weight_names is None else tuple(weight_names)
        self.code_names = None if code_names is None else tuple(code_names)
        self.logdir = str(logdir)
        self.episode_return = 0.0
        self._tags: set[str] = set()
        self._tb = TensorBoardLogger(logdir)
        if config:
            self._tb.log_config(config, metric_tags=("reward/return",))

    def values(self, action, reward: float, info: Mapping[str, float], llm_actions=None) -> dict[str, float]:
        """The step's scalars by tag (module docstring); adds `reward` to the return."""
        out = self._action_values(np.asarray(action))
        self.episode_return += float(reward)
        out["reward/total"], out["reward/return"] = float(reward), self.episode_return
        missing = [term for term in self.reward_weights if term not in info]
        known = {term: w * float(info[term]) for term, w in self.reward_weights.items() if term in info}
        for term, part in known.items():
            out[f"reward/{term}"] = part
        if len(missing) == 1:  # the one term info does not hold: what is left of the (linear) reward
            out[f"reward/{missing[0]}"] = float(reward) - sum(known.values())
        for key, value in info.items():
            if key not in _NOT_CURVES and isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                out[INFO_TAGS.get(key, f"task/{key}")] = float(value)
        if llm_actions is not None:
            theirs, every = llm_actions
            out["llm/actions"] = float(theirs)
            out["llm/action_share"] = theirs / every if every else math.nan
        return out

    def _action_values(self, action: np.ndarray) -> dict[str, float]:
        """The action's summary: weights' means per candidate feature, or counts per code."""
        if self.weight_names is not None:
            rows = action.astype(np.float64).reshape(-1, len(self.weight_names)).mean(axis=0)
            return {f"agent/weight/{name}": float(w) for name, w in zip(self.weight_names, rows)}
        counts = np.bincount(action.astype(np.int64).ravel(), minlength=len(self.code_names))
        return {f"agent/code/{name}": float(c) for name, c in zip(self.code_names, counts)}

    def record(self, step: int, action, reward: float, info: Mapping[str, float], llm_actions=None) -> dict:
        """Write the step's scalars (`values`) at `step`; returns them."""
        values = self.values(action, reward, info, llm_actions)
        self._tb.log_scalars(step, values)
        self._tags.update(values)
        return values

    def close(self) -> None:
        """Write the dashboard's layout of the curves written, and close the event file."""
        self._tb.log_layout(layout_of(self._tags, AGENT_CURVES))
        self._tb.close()
