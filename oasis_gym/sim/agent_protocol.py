"""How a platform agent plugs into the simulation: the protocol it fills and the view it gets.

The engine names no agent. Whoever builds a `Simulation` (the envs) passes its platform
agents by name (`platform_agents={name: agent, ...}`; `oasis_gym.agents` holds the
recommender and the moderator), and the step drives each one through `PlatformAgent`, in
that order:

1. `begin_step(view)`: the feeds just served are in `view.feeds` (before any action);
2. `apply(view, action)`: agents with `acts_first` before the users act (moderation: a removed
   post can no longer be rated this step), the others after the platform applied the users'
   actions (ranking weights of the next feeds);
3. after the clock advanced and the next users were activated: `observe(view)` (also after
   every reset and resume), then `reward(view)`.

`validate(action)` checks an action before anything of the step is applied (a step is
atomic), `check(recsys)` whether the simulation can host the agent at all, and
`state_dict(view)` (with `state_key`) gives the state saved in the journal with every step
(`AgentView.saved_state` holds it again after a resume). An agent's attributes are captured
before a step and restored if the step fails (`step_atomic`).

An agent reads the simulation only through `AgentView`: the platform, the served feeds, the
last step's outcome, the recommender, the episode's seed and start, the saved state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..platform import Platform
from .batches import ObsBatch, StepOutcome


@dataclass(frozen=True)
class AgentView:
    """What a platform agent may read of the simulation (built anew for every call)."""

    platform: Platform
    feeds: ObsBatch  # the observations (feeds) of the active users: served this step
    last_outcome: StepOutcome | None  # the step just applied (None right after reset / resume)
    recsys: Any  # the recommender (the recommender agent sets its ranking weights)
    seed: int | None  # the episode's seed
    start_minute: int  # the simulated minute the episode started at
    saved_state: dict = field(default_factory=dict)  # states saved with the journal's last step (resume)


class PlatformAgent(Protocol):
    """A platform-side agent (recommender, moderator) the step drives (module docstring)."""

    acts_first: bool  # its action is applied before the users' actions (else after)
    state_key: str | None  # key of its saved state in the journal's meta (None: it keeps none)

    def check(self, recsys: Any) -> None:
        """Raise ValueError unless the simulation (its recommender) can host this agent."""

    def validate(self, action: Any) -> Any:
        """The action checked and normalized, or ValueError."""

    def begin_step(self, view: AgentView) -> None:
        """Called first in every step, with the feeds just served."""

    def apply(self, view: AgentView, action: Any) -> None:
        """Act on the platform (or the recommender) with a validated action."""

    def reward(self, view: AgentView) -> float:
        """The reward of the step just played."""

    def observe(self, view: AgentView) -> np.ndarray:
        """The observation for the next action."""

    def state_dict(self, view: AgentView) -> dict:
        """JSON-able state saved with every step (only called when `state_key` is set)."""
