"""LLMPolicy: LLM-driven users in the env — one batched generation per step for all of them.

The env renders what each active LLM user reads (`feed_views`); `LLMPolicyCore` turns the
views into prompts (shared instructions first, for prefix caching), per-agent JSON schemas
of the actions each agent can take on what it sees, one backend call, strict parsing and
bounded memory. Every reply becomes a valid action or a counted do_nothing. By default the
reply carries no "reason" (fewer generated tokens); pass ``schema_config`` to ask for one. Token and
latency stats of the last call are kept in `last_stats` (the metrics recorder logs them).
"""

from __future__ import annotations

import sqlite3

from oasis_gym.actions import ActionType
from oasis_gym.sim import ActionArrays, ObsBatch

from .base import BasePolicy, actions_from_dicts, sim_of
from .llm import LLMPolicyCore, SchemaConfig
from .llm.defaults import LazyBackend, make_backend

__all__ = ["LLMPolicy", "backend_label", "make_backend", "record_interview"]


def backend_label(backend) -> str:
    """One line naming a backend and its model, e.g. for the CLI to print at start-up."""
    detail = backend.describe() if hasattr(backend, "describe") else getattr(backend, "name", type(backend).__name__)
    if not hasattr(backend, "describe") and isinstance(getattr(backend, "device", None), str):
        detail += f" on {backend.device}"
    model = getattr(backend, "model", None)
    model = model if isinstance(model, str) else getattr(backend, "model_path", "?")
    if hasattr(backend, "endpoints"):
        detail += " at " + ", ".join(e.url for e in backend.endpoints)
    load = getattr(backend, "load_s", None)
    return f"{detail}, model {model}" + (f" (engine ready in {load:.1f} s)" if load is not None else "")


class LLMPolicy(BasePolicy):
    """Every given user decides by LLM; one batched backend call per step (see module doc)."""

    name = "llm"

    def __init__(self, backend=None, core: LLMPolicyCore | None = None, **core_kwargs):
        if core is None and "schema_config" not in core_kwargs and "prompt" not in core_kwargs:
            # the "reason" field is most of a reply's tokens and nothing reads it: off unless asked
            # for (schema_config=SchemaConfig(max_reason_chars=N)); interviews stay free text
            core_kwargs["schema_config"] = SchemaConfig(max_reason_chars=0)
        if core is None:
            core = LLMPolicyCore(backend if backend is not None else make_backend(), **core_kwargs)
        self.core = core
        self.last_stats: dict = {}

    def reset(self, env, users, seed: int | None) -> None:
        """A new episode: the base generator and the core's memory and sampling seeds from `seed`
        (`LLMPolicyCore.reset`: the same seed, the same requests, whatever ran before)."""
        super().reset(env, users, seed)
        self.core.reset(None if seed is None else int(self.rng.integers(0, 2**31 - 1)))

    def act(self, env, obs: ObsBatch) -> ActionArrays:
        """Feed views of the active users -> one batched LLM decision -> env actions."""
        if len(obs) == 0:
            self.last_stats = {"agents": 0}
            return ActionArrays.empty()
        self._start_backend()
        sim = sim_of(env)
        self.core.adopt_action_set([ActionType(a) for a in sim.platform.config.available_actions])
        views = sim.feed_views(obs.users)
        actions, self.last_stats = self.core.decide(views)
        return actions_from_dicts(obs.users, actions)

    def interview(self, env, agent: str, question: str) -> str:
        """Ask a user a free-form question mid-run (OASIS's INTERVIEW); the question and answer
        are journaled (table `interview`, and a trace row as OASIS writes it)."""
        sim = sim_of(env)
        sim.require_live()
        user = sim.user_id(agent)  # KeyError naming an agent the env does not have
        view = sim.profile_views([user])[0]
        self._start_backend()
        answer = self.core.interview(view, question)
        record_interview(sim, user, question, answer)
        return answer

    def _start_backend(self) -> None:
        """A backend made on first use (`LazyBackend`) starts here, outside the core's net for a
        failing backend: an engine that cannot start ends the run with its error, rather than
        turning every decision into a do_nothing. A core of the user's own may have no backend."""
        backend = getattr(self.core, "backend", None)
        if isinstance(backend, LazyBackend):
            backend.ready()

    def state_dict(self) -> dict:
        """The base policy's state plus the core's memory and RNG."""
        return {**super().state_dict(), "core": self.core.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved."""
        super().load_state_dict(state)
        if "core" in state:
            self.core.load_state_dict(state["core"])


def record_interview(sim, user: int, question: str, answer: str) -> None:
    """Journal one interview (table ``interview`` and a trace row), in one transaction."""
    import json

    conn: sqlite3.Connection = sim.journal.conn
    pf = sim.platform
    conn.execute("BEGIN")
    try:
        conn.execute(
            "INSERT INTO interview(step, user_id, question, answer, created_at) VALUES (?,?,?,?,?)",
            (pf.step, user, question, answer, pf.created_at()),
        )
        conn.execute(
            "INSERT INTO trace(user_id, created_at, action, info, step, result) VALUES (?,?,?,?,?,?)",
            (
                user,
                pf.created_at(),
                "interview",
                json.dumps({"prompt": question, "interview_response": answer}, ensure_ascii=False),
                pf.step,
                "ok",
            ),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
