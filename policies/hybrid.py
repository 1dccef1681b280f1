"""HybridPolicy: route each user to a policy (e.g. core users -> LLM, the rest -> ABM).

One step calls every routed policy exactly once with exactly its active users, in one batch,
and joins the answers (HiSim / OASIS core-user pattern).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oasis_gym.sim import ActionArrays, ObsBatch

from .base import BasePolicy, Policy, check_actions, sim_of


class HybridPolicy(BasePolicy):
    """`routes` is a sequence of (policy, user ids); a `default` policy takes everyone else."""

    name = "hybrid"

    def __init__(self, routes: Sequence[tuple[Policy, np.ndarray]], default: Policy | None = None):
        self.routes = [(p, np.unique(np.asarray(ids, dtype=np.int64))) for p, ids in routes]
        seen = np.concatenate([ids for _, ids in self.routes]) if self.routes else np.empty(0, np.int64)
        if len(np.unique(seen)) != len(seen):
            raise ValueError("a user is routed to more than one policy")
        self.default = default

    @classmethod
    def top_k_by_followers(cls, env, core: Policy, rest: Policy, k: int) -> HybridPolicy:
        """The k most-followed users (ties: lower id) go to `core`, everyone else to `rest`."""
        pf = sim_of(env).platform
        return cls([(core, pf.most_followed(k))], default=rest)

    @classmethod
    def core_users(cls, env, core: Policy, rest: Policy) -> HybridPolicy:
        """Users flagged `is_core` in the population go to `core`."""
        return cls([(core, np.flatnonzero(sim_of(env).platform.u_is_core.a))], default=rest)

    def policies(self) -> list[Policy]:
        """Every policy of the routes, then the default one."""
        return [p for p, _ in self.routes] + ([self.default] if self.default is not None else [])

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        """Reset each policy with its users and a seed of its own (spawned from `seed`)."""
        seqs = np.random.SeedSequence(seed).spawn(len(self.policies()))
        users = np.asarray(users, dtype=np.int64)
        for (policy, ids), s in zip(self.routes, seqs):
            policy.reset(env, ids, int(s.generate_state(1)[0]))
        if self.default is not None:
            routed = np.concatenate([ids for _, ids in self.routes]) if self.routes else np.empty(0, np.int64)
            self.default.reset(env, users[~np.isin(users, routed)], int(seqs[-1].generate_state(1)[0]))

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """Ask each policy for its active users; the answers merged back into user-id order."""
        parts, taken = [], np.zeros(len(obs), dtype=bool)
        for policy, ids in self.routes:
            rows = np.flatnonzero(np.isin(obs.users, ids))
            taken[rows] = True
            parts.append((rows, self._call(policy, env, obs.take(rows))))
        if self.default is not None:
            rows = np.flatnonzero(~taken)
            parts.append((rows, self._call(self.default, env, obs.take(rows))))
        joined = ActionArrays.concat([a for _, a in parts])
        order = np.argsort(joined.users, kind="stable")  # back to user-id order
        return _reorder(joined, order)

    @staticmethod
    def _call(policy: Policy, env, obs: ObsBatch) -> ActionArrays:
        acts = policy.act(env, obs)
        check_actions(acts, obs)
        return acts

    def state_dict(self) -> dict:
        """Each policy's state, in `policies()` order."""
        return {"policies": [p.state_dict() if hasattr(p, "state_dict") else {} for p in self.policies()]}

    def load_state_dict(self, state: dict) -> None:
        """Restore what `state_dict` saved."""
        for p, s in zip(self.policies(), state.get("policies", [])):
            if hasattr(p, "load_state_dict"):
                p.load_state_dict(s)


def _reorder(a: ActionArrays, order: np.ndarray) -> ActionArrays:
    pick = lambda col: None if col is None else np.asarray(col)[order]  # noqa: E731
    text = None if a.text is None else [a.text[i] for i in order.tolist()]
    return ActionArrays(
        a.users[order], a.type[order], pick(a.post), pick(a.comment), pick(a.user), text, pick(a.stance)
    )
