"""The run loop shared by the CLI and Python users: `simulate(env, policy, steps)`.

Each step asks the policy once for the actions of all active users (batched), applies them
through the env's fast path and reports progress. Metrics recorders attach to the env's
simulation as step hooks, so they see every step inside its transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from oasis_gym.metrics.llm_stats import llm_rates


@dataclass
class RunSummary:
    """What a run did: steps, actions (sent, accepted), time, active users per step."""

    steps: int = 0
    actions: int = 0
    accepted: int = 0
    seconds: float = 0.0
    active_per_step: list[int] = field(default_factory=list)
    db_path: str | None = None
    llm: dict = field(default_factory=dict)  # LLM users over the run: counts (agents, valid, ...) and rates

    @property
    def actions_per_s(self) -> float:
        """Actions sent per second of wall time."""
        return self.actions / self.seconds if self.seconds else 0.0


def simulate(
    env,
    policy,
    steps: int | None = None,
    *,
    seed: int | None = None,
    reset: bool = True,
    progress: bool = False,
    callback: Callable | None = None,
) -> RunSummary:
    """Run `steps` steps (default: until the episode ends) with one batched policy call each.

    `reset=False` continues the current episode (e.g. after a resume). `callback(env, outcome)`
    runs after every step.
    """
    if hasattr(policy, "state_dict"):  # saved in the journal each step, for resume
        env.sim.state_providers["policy"] = policy.state_dict
    if reset:
        env.reset(seed=seed)
        policy.reset(env, np.arange(env.sim.platform.n_users), seed)
    total = steps if steps is not None else env.sim.config.max_cycles - env._cycles
    summary = RunSummary(db_path=env.sim.db_path)
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=total, unit="step", dynamic_ncols=True)
    start = time.perf_counter()
    try:
        for _ in range(total):
            if not env.agents:
                break
            obs = env.sim.obs
            acts = policy.act(env, obs)
            _report_llm_stats(env, policy, summary.llm)
            out = env.step_batch(acts)
            summary.steps += 1
            summary.actions += len(out.users)
            summary.accepted += int((out.results == 0).sum())
            summary.active_per_step.append(len(obs.users))
            if callback is not None:
                callback(env, out)
            if bar is not None:
                elapsed = time.perf_counter() - start
                bar.set_postfix(active=len(obs.users), actions_per_s=f"{summary.actions / max(elapsed, 1e-9):,.0f}")
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    summary.seconds = time.perf_counter() - start
    if summary.llm:  # the LLM users' speed over the run: decisions/s, prefix-cache hit rate, ...
        rates = {k: round(v, 3) for k, v in llm_rates(summary.llm).items()}
        summary.llm["latency_s"] = round(summary.llm.get("latency_s", 0.0), 3)
        summary.llm.update(rates)
    return summary


_LLM_SUMMARY = (
    "agents",
    "valid",
    "invalid",
    "fallback",
    "deadline_noop",
    "prompt_tokens",
    "completion_tokens",
    "backend_cached_prompt_tokens",
    "latency_s",
)


def _report_llm_stats(env, policy, totals: dict | None = None) -> None:
    """Hand the LLM policies' token / latency stats of this step to the metrics recorders
    (step hooks with `record_llm`), which log them with the step, and add their counts to
    `totals` (the run summary)."""
    recorders = [h for h in env.sim.step_hooks if hasattr(h, "record_llm")]
    stack = [policy]
    while stack:
        p = stack.pop()
        stack.extend(p.policies() if hasattr(p, "policies") else [])
        stats = getattr(p, "last_stats", None)
        if stats:
            for recorder in recorders:
                recorder.record_llm(stats)
            if totals is not None:
                for k in _LLM_SUMMARY:
                    if isinstance(stats.get(k), (int, float)) and not isinstance(stats[k], bool):
                        totals[k] = totals.get(k, 0) + stats[k]


def resume(db_path: str, policy, steps: int | None = None, *, progress: bool = False, **env_overrides) -> tuple:
    """Continue a run from its journal with `policy` (built as the original run built it):
    restores the env and the policy state saved with the last completed step, then runs."""
    from oasis_gym.envs.social_env import SocialMediaEnv

    env = SocialMediaEnv.resume(db_path, **env_overrides)
    policy.reset(env, np.arange(env.sim.platform.n_users), env.sim.seed)
    saved = env.sim.saved_state.get("policy")
    if saved is not None and hasattr(policy, "load_state_dict"):
        policy.load_state_dict(saved)
    return env, simulate(env, policy, steps, reset=False, progress=progress)
