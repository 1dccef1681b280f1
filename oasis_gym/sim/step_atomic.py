"""A step happens completely or not at all: capture and restore a Simulation's state.

`Simulation.step` checks every input first, then captures what a step can change, runs
the step, and on any failure (a step hook, the reward function, a recommender, the commit)
restores it exactly: the platform (`Platform.checkpoint`, O(columns + rows written)), the
random generators' states, pending info-action views, the current observations, the
recommender's own state and the platform agents'. The journal's half-built transaction is
rolled back by the step itself (`Journal.begin_step` / `abort_step`), so the database never
sees a failed step. Step hooks that keep state of their own (the metrics recorder) define
`rollback_step(sim)`, called after the rest is restored, when they ran in the failed step.

So a failed call leaves no trace, and a retry gives exactly the run the failure never
happened in (same seed, same run). The one exception is a step the journal has already
taken (handed to its writer thread, or committed in place: `Journal.steps_taken`): a signal
arriving with it (Ctrl-C, SIGTERM) still raises, but the step stays done in memory as in the
journal, never rolled back in one and kept in the other.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass
class StepState:
    """What a step can change, captured before it runs."""

    platform: Any
    rng: list
    views: dict
    obs: Any
    active: Any
    platform_obs: dict
    last_outcome: Any
    recsys: Any
    agents: dict


def capture(sim: Any) -> StepState:
    """The state `restore` brings back if the step fails (`sim`: the `Simulation`)."""
    recsys_cp = sim.recsys.checkpoint() if hasattr(sim.recsys, "checkpoint") else None
    sim.hooks_ran = []
    return StepState(
        sim.platform.checkpoint(),
        [g.bit_generator.state for g in sim._generators()],
        dict(sim.views),
        sim.obs,
        getattr(sim, "active", None),
        dict(sim.platform_obs),
        sim.last_outcome,
        recsys_cp,
        {name: dict(vars(a)) for name, a in sim.platform_agents.items()},
    )


def restore(sim: Any, st: StepState) -> None:
    """Bring `sim` back to the state `capture` saw (the platform, generators, views, hooks, ...)."""
    sim.platform.rollback(st.platform)
    for g, state in zip(sim._generators(), st.rng):
        g.bit_generator.state = state
    sim.views = st.views
    sim.obs, sim.active, sim.platform_obs, sim.last_outcome = st.obs, st.active, st.platform_obs, st.last_outcome
    if st.recsys is not None:
        sim.recsys.rollback(st.recsys)
    for name, state in st.agents.items():
        vars(sim.platform_agents[name]).clear()
        vars(sim.platform_agents[name]).update(state)
    ran, sim.hooks_ran = sim.hooks_ran, []
    for hook in ran:
        if hasattr(hook, "rollback_step"):
            hook.rollback_step(sim)


@contextlib.contextmanager
def unless_committed(sim: Any, saved: StepState) -> Iterator[None]:
    """Run a step's work: if it raises before the journal took the step, `sim` goes back to
    `saved` (a signal arriving with the step's commit leaves the step done); either way the
    platform stops recording in-place writes."""
    taken = sim.journal.steps_taken
    try:
        yield
    except BaseException:
        if sim.journal.steps_taken == taken:
            restore(sim, saved)
        raise
    finally:
        sim.platform.release()
