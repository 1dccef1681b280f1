"""The split step (`SimulationConfig.feeds_after_agents`): the platform agents act, then the
active users' feeds are built, then the users act, then the step is committed.

`Simulation.step` builds a step's feeds at the end of the step before, so a recommender's
action (its ranking weights) ranks the *next* step's feeds (v0 and the PettingZoo envs, whose
users and agents all act in one call). On the fast path an action ranks the feeds of its own
step. The split step gives the platform that order (docs/one-world-plan.md, finding 2):

    begin(platform_actions) -> the feeds     agents act (in order), feeds are built, the agents'
                                             `begin_step` sees them
    finish(acts) -> StepOutcome              the users' actions on those feeds, committed as
                                             one step (`Simulation.step`'s second half)
    cancel()                                 undo `begin`: as if it never ran

The whole step is atomic as `Simulation.step` is: `begin` captures the state, and a failure in
either half (or a `cancel`) restores it exactly; nothing reaches the journal before `finish`
commits, so a run killed between the halves resumes from the step before.
"""

from __future__ import annotations

from typing import Any

from .batches import ActionArrays, ObsBatch, StepOutcome
from .step_atomic import capture, restore, unless_committed
from .step_input import check_platform_actions, check_step_input


def begin(sim: Any, platform_actions: dict | None) -> ObsBatch:
    """The split step's first half on `sim` (a `Simulation`); its feeds."""
    sim.require_live()
    if not sim.config.feeds_after_agents:
        raise RuntimeError(
            "begin()/finish() are the split step of feeds_after_agents=True; this simulation steps with step()"
        )
    if sim.begun is not None:
        raise RuntimeError("the step begun is not finished: call finish(acts) or cancel() first")
    actions = check_platform_actions(platform_actions, sim.platform_agents)
    saved = capture(sim)
    try:
        for name, agent in sim.platform_agents.items():
            if name in actions:
                agent.apply(sim.agent_view(), actions[name])
        if sim.activation_hook is not None:  # who is active is decided now (a task world's visits)
            sim.active = sim.activation_hook(sim)
        sim.obs = sim.observe(sim.active)
        view = sim.agent_view()
        for agent in sim.platform_agents.values():
            agent.begin_step(view)
    except BaseException:
        restore(sim, saved)
        sim.platform.release()
        raise
    sim.begun = saved
    return sim.obs


def finish(sim: Any, acts: ActionArrays) -> StepOutcome:
    """The split step's second half: the users' actions on the feeds of `begin`, committed."""
    sim.require_live()
    if sim.begun is None:
        raise RuntimeError("no step begun: call begin(platform_actions) first")
    users, cols, texts, stance, _ = check_step_input(acts, None, sim.platform_agents)
    saved, sim.begun = sim.begun, None
    with unless_committed(sim, saved):  # the whole step, `begin` included
        batch, ignored = sim._admit(users, cols, texts, stance)
        out = sim._apply(batch, ignored)
        sim._commit(out)
        return out


def cancel(sim: Any) -> None:
    """Undo a `begin` whose step will not be finished (nothing if none is open)."""
    saved, sim.begun = sim.begun, None
    if saved is not None:
        restore(sim, saved)
        sim.platform.release()
