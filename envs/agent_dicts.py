"""The {agent: value} dicts a PettingZoo step returns for every live agent, built fast.

Each is a copy of a template made once per episode: copying a dict is about 10x faster than
building one (2M agents: 40 against 400 ms), and at a million users building the five dicts
of a step (observations, rewards, terminations, truncations, infos) cost six times the
simulation's own step. The values a template holds are shared by every copy (the inactive
agents' observation and info): read them, do not write them.
"""

from __future__ import annotations

import numpy as np


class AgentDicts:
    """Fresh {agent: value} dicts for the live agents of the current episode."""

    def __init__(self) -> None:
        self._agents: list | None = None
        self._templates: dict = {}

    def constant(self, agents: list, key, value) -> dict:
        """{agent: value} for each of `agents` (one shared `value`); `key` names the template."""
        if agents is not self._agents:  # a new episode (its own list of agents)
            self._agents, self._templates = agents, {}
        template = self._templates.get(key)
        if template is None:
            template = self._templates[key] = dict.fromkeys(agents, value)
        return template.copy()

    def floats(self, agents: list, values: np.ndarray) -> dict:
        """`dict(zip(agents, values.tolist()))` padded with 0.0 for the agents beyond `values`:
        a copy of the all-0.0 template, with only the entries that are not 0.0 set (-0.0 and
        NaN included)."""
        out = self.constant(agents, "0.0", 0.0)
        values = np.asarray(values)[: len(agents)]
        set_ = np.flatnonzero((values != 0) | np.signbit(values))
        out.update(zip([agents[i] for i in set_.tolist()], values[set_].tolist()))
        return out
