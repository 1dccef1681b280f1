"""Scenarios: the OASIS paper's experiments as runnable TOML configs that report their figures.

A scenario file (``oasis_gym/envs/scenarios/<name>.toml``) names a population, the env
arguments, the user policy and the experiment's own settings; its ``[scenario] kind`` picks the
code here that seeds the initial content (the env's ``setup(sim)`` hook, run at every reset
after the users are added), records the experiment's metrics every step and computes its
figures at the end:

* ``information_spread`` (twitter_information_spread): one real Twitter15 cascade re-run on
  its 111 real users; per-minute scale / depth / max breadth of the root's repost tree and
  their NRMSE against the real propagation.
* ``group_polarization``: two groups of opposite leaning discuss a choice dilemma; opinion
  mean / std / bimodality / Esteban-Ray / share moved to the extremes, overall and per group.
* ``herd_effect`` (reddit_herd_effect): Muchnik-style first-vote treatment of comments; mean
  score of the up-treated, control and down-treated groups over time.
* ``misinformation`` (misinformation_1m): four true news posts and four matched rumours among
  a million synthetic users; related posts, impressions and reach of each class over time.

Usage::

    sc = load_scenario("reddit_herd_effect", {"users": 3600})
    figures = sc.run(db_path="herd.db", logdir="runs/herd")

    oasis-gym run --scenario reddit_herd_effect --set users=3600

Every run stores the scenario config in the journal's meta (``state.scenario``, every step)
and the final figures (``scenario_figures``); the per-step scenario metrics go to the
``metrics(step, tag, value)`` table (so ``oasis-gym report`` plots them) and to TensorBoard
(run ``<logdir>/scenario``, with the config as text and hparams), next to the generic metrics
of ``MetricsRecorder`` (run ``<logdir>/episode_0``).

Overrides (``--set key=value``): a dotted key addresses the TOML tables
(``policy.abm.cascade_p=0.5``); a bare key is looked up in [scenario], [population], [env]
and [policy] and must be found in exactly one of them (``users=3600``, ``steps=10``). Values
are parsed as TOML (``3600``, ``0.5``, ``true``, ``"text"``, ``[1, 2]``), else taken as text.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import json
import math
import re
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .actions import ACTION_BY_NAME, ActionType as A, Result as R
from .experiments.evidence import evidence, evidence_text
from .metrics import formulas as F
from .platform.platform import MISINFO_LABEL, ORIGINAL, TRUE_LABEL, ActionBatch
from .platform.store import unpack_keys
from .policies.abm import ABMPolicy
from .population import (
    HOURS,
    Population,
    data_path,
    load_reddit_json,
    load_twitter_csv,
    synthetic,
)

__all__ = [
    "Scenario", "load_scenario", "list_scenarios", "scenario_path", "parse_sets", "apply_overrides",
    "add_scenario_args", "run_scenario_cli", "nrmse", "cascade_tops", "root_cascade_curves",
    "DecayingCascadeABM", "CommentVoter", "SampledFeed", "KINDS",
]

SECTIONS = ("scenario", "population", "env", "feed", "policy", "figures", "metrics", "topic", "interview",
            "content", "posts", "evidence", "sweep")
_ALIAS_SECTIONS = ("scenario", "population", "env", "policy")


# =========================================================================== config files

def scenario_dir() -> Path:
    """The folder of the shipped scenario files (package data of oasis_gym.envs)."""
    return Path(str(importlib.resources.files("oasis_gym.envs").joinpath("scenarios")))


def list_scenarios() -> list[str]:
    return sorted(p.stem for p in scenario_dir().glob("*.toml"))


def scenario_path(name_or_path: str | Path) -> Path:
    """A shipped scenario by name, or a .toml file path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" and p.is_file():
        return p
    cand = scenario_dir() / f"{p.name}.toml"
    if p.suffix != ".toml" and cand.is_file():
        return cand
    raise FileNotFoundError(f"no scenario {str(name_or_path)!r}: shipped ones are {list_scenarios()}, "
                            "or give the path of a .toml file")


def parse_value(text: str) -> Any:
    """A --set value: TOML syntax (numbers, booleans, strings, arrays), else the raw text."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(items: Sequence[str]) -> dict[str, Any]:
    """["key=value", ...] -> {key: parsed value}."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = str(item).partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--set expects key=value, got {item!r}")
        out[key.strip()] = parse_value(value.strip())
    return out


def _resolve_key(config: Mapping[str, Any], key: str) -> list[str]:
    parts = key.split(".")
    if len(parts) > 1:
        if parts[0] not in config and parts[0] not in SECTIONS:
            raise KeyError(f"unknown section {parts[0]!r} in {key!r}; sections: {sorted(config)}")
        return parts
    hits = [s for s in _ALIAS_SECTIONS if isinstance(config.get(s), Mapping) and key in config[s]]
    if len(hits) == 1:
        return [hits[0], key]
    if not hits:
        raise KeyError(f"unknown setting {key!r}: none of [{'], ['.join(_ALIAS_SECTIONS)}] has it; "
                       f"write section.key (e.g. env.{key}) to add one")
    raise KeyError(f"ambiguous setting {key!r} (in {hits}); write e.g. {hits[0]}.{key}")


def apply_overrides(config: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict:
    """A deep copy of `config` with the (dotted or bare) keys of `overrides` set."""
    cfg = copy.deepcopy(dict(config))
    for key, value in overrides.items():
        path = _resolve_key(cfg, key)
        node = cfg
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise KeyError(f"{key!r}: {part!r} is a value, not a table")
        node[path[-1]] = value
    return cfg


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | Sequence[str] | None = None) -> "Scenario":
    """Load a shipped scenario (by name) or a .toml file, with optional overrides."""
    path = scenario_path(name_or_path)
    with open(path, "rb") as f:
        config = tomllib.load(f)
    scenario = Scenario(config, str(path))
    scenario.check()
    return scenario.with_overrides(overrides) if overrides else scenario


def _data_file(name: str) -> Path:
    """A file path as given if it exists, else a data file shipped in oasis_gym/data."""
    p = Path(name)
    return p if p.is_file() else data_path(name)


# =========================================================================== populations

def accounts(names: Sequence[str], bio: str = "") -> Population:
    """Seed accounts (scenario hosts, vote seeders): activity 0, so they never act."""
    n = len(names)
    return Population(
        n=n, user_name=list(names), name=list(names), bio=[bio] * n, persona=[bio] * n,
        activity=np.zeros((n, HOURS), np.float32), follow_src=np.zeros(0, np.int64),
        follow_dst=np.zeros(0, np.int64), previous_posts=[], opinion=np.zeros(n, np.float32),
        interests=np.zeros(n, np.uint64), is_core=np.zeros(n, bool), extra=None, source="accounts")


def concat_populations(parts: Sequence[Population], source: str | None = None) -> Population:
    """One population from several, ids shifted in order (edges and previous posts follow)."""
    offsets = np.cumsum([0] + [p.n for p in parts])

    def strings(field: str) -> list[str]:
        return [s for p in parts for s in getattr(p, field)]

    extra = None
    if any(p.extra is not None for p in parts):
        extra = [e for p in parts for e in (p.extra if p.extra is not None else [{}] * p.n)]
    pop = Population(
        n=int(offsets[-1]), user_name=strings("user_name"), name=strings("name"), bio=strings("bio"),
        persona=strings("persona"), activity=np.concatenate([p.activity for p in parts]).astype(np.float32),
        follow_src=np.concatenate([p.follow_src + o for p, o in zip(parts, offsets)]).astype(np.int64),
        follow_dst=np.concatenate([p.follow_dst + o for p, o in zip(parts, offsets)]).astype(np.int64),
        previous_posts=[(int(a) + int(o), t) for p, o in zip(parts, offsets) for a, t in p.previous_posts],
        opinion=np.concatenate([p.opinion for p in parts]).astype(np.float32),
        interests=np.concatenate([p.interests for p in parts]).astype(np.uint64),
        is_core=np.concatenate([p.is_core for p in parts]).astype(bool), extra=extra,
        source=source or "+".join(p.source for p in parts))
    pop.validate()
    return pop


def _with_edges(pop: Population, src: np.ndarray, dst: np.ndarray) -> Population:
    """`pop` with extra follow edges (duplicates of existing edges dropped)."""
    s = np.concatenate([pop.follow_src, np.asarray(src, np.int64)])
    d = np.concatenate([pop.follow_dst, np.asarray(dst, np.int64)])
    key, first = np.unique(s * np.int64(pop.n) + d, return_index=True)
    del key
    first.sort()
    return dataclasses.replace(pop, follow_src=s[first], follow_dst=d[first])


# =========================================================================== cascades

def cascade_tops(pf, upto: int | None = None) -> np.ndarray:
    """Cascade root (an original post) of every post: shares point at what they share (a
    repost at its root, a quote at the quoted post), followed up to an original by pointer
    jumping (O(posts x log depth))."""
    n = pf.n_posts if upto is None else int(upto)
    ids = np.arange(n, dtype=np.int64)
    root = pf.p_root.a[:n]
    top = np.where((pf.p_kind.a[:n] != ORIGINAL) & (root >= 0), root, ids)
    while True:
        nxt = top[top]
        if np.array_equal(nxt, top):
            return top
        top = nxt


def root_cascade_curves(pf, root: int, horizon: int, minutes_per_step: int = 3) -> F.CascadeCurves:
    """Per-minute scale / depth / max breadth of the cascade under `root`, minute 0 = the root.

    A share made during step s (platform minute m) counts from the END of that step,
    m + minutes_per_step - root minute, as OASIS stamps actions (root at minute 0, actions of
    its k-th time step at 3k). Tree parents follow formulas.infer_repost_parents with the
    current follow graph: a share hangs under the most recent earlier sharer of the same post
    whom its author follows, else under the post it shares."""
    members = np.flatnonzero(cascade_tops(pf) == root)
    shared = np.where(members == root, -1, pf.p_root.a[members])
    rel = pf.p_minute.a[members] - pf.p_minute.a[root] + np.where(members == root, 0, minutes_per_step)
    src, dst = unpack_keys(pf.rel["follow"].keys())
    parent = F.infer_repost_parents(shared, pf.p_author.a[members], rel, src, dst, post_id=members)
    return F.cascade_curves(parent, rel, horizon, user=pf.p_author.a[members])


def nrmse(sim: Sequence[float], real: Sequence[float], horizon: int) -> float:
    """sqrt(mean((sim - real)^2)) / real[horizon] over minutes 0..horizon; both curves are
    padded with their last value when shorter."""
    s, r = (_pad(np.asarray(x, dtype=np.float64), horizon + 1) for x in (sim, real))
    return float(np.sqrt(np.mean((s - r) ** 2)) / r[-1]) if r[-1] else float("nan")


def _pad(x: np.ndarray, n: int) -> np.ndarray:
    if len(x) >= n:
        return x[:n]
    return np.r_[x, np.full(n - len(x), x[-1] if len(x) else 0.0)]


# =========================================================================== policies

def _build_abm(spec: Mapping[str, Any]):
    """ABMPolicy from the [policy.abm] table ("none" means None; nested tables give the
    opinion model's params and BehaviourParams)."""
    from oasis_gym.policies.abm import ABMConfig
    from oasis_gym.policies.abm_dynamics import MODEL_ALIASES, MODEL_PARAMS, BehaviourParams

    spec = dict(spec)
    half_life = spec.pop("cascade_half_life", None)
    half_life = None if half_life in (None, "", "none", 0) else float(half_life)
    model = spec.pop("opinion_model", "deffuant_weisbuch")
    model = None if model in (None, "", "none") else str(model)
    params = spec.pop("opinion_params", None)
    if params is not None and model is not None:
        name = MODEL_ALIASES.get(model.lower(), model)
        params = MODEL_PARAMS[name](**params)
    behaviour = BehaviourParams(**spec.pop("behaviour", {}))
    diffusion = spec.pop("diffusion", None)
    diffusion = None if diffusion in (None, "", "none") else str(diffusion)
    if isinstance(spec.get("diffusion_action"), str):
        spec["diffusion_action"] = int(ACTION_BY_NAME[spec["diffusion_action"]])
    content = spec.pop("content", None)
    cfg = ABMConfig(opinion_model=model, opinion_params=params, behaviour=behaviour, diffusion=diffusion, **spec)
    if diffusion == "content_aware":   # users share by what posts say (policies/content_share.py)
        from oasis_gym.policies.content_share import ContentAwareABM, ContentParams

        return ContentAwareABM(cfg, content=ContentParams(**(content or {})))
    return DecayingCascadeABM(cfg, half_life=half_life)


def _build_llm(spec: Mapping[str, Any]):
    """The LLM user policy (imported lazily: the llm extra may be missing)."""
    try:
        from oasis_gym.policies.llm_policy import LLMPolicy, make_backend
    except ImportError as err:
        raise RuntimeError(f"LLM users need the 'llm' extra ({err}); "
                           "install the 'llm' extra or run with --set policy.kind=abm") from err
    backend = make_backend(spec.get("backend", "auto"), model=spec.get("model") or None,
                           endpoints=list(spec.get("endpoints") or []) or None,
                           **dict(spec.get("backend_options", {})))   # e.g. device, dtype
    return LLMPolicy(backend, **dict(spec.get("options", {})))


def _core_ids(spec: Mapping[str, Any], population: Population) -> np.ndarray:
    """Users routed to the LLM in a hybrid run: flagged core users or the most followed."""
    k = int(spec.get("core_users", 10))
    if spec.get("core", "top_followers") == "is_core":
        return np.flatnonzero(population.is_core)[:k]
    order = np.lexsort((np.arange(population.n), -population.in_degree()))
    return np.sort(order[:k])


class DecayingCascadeABM(ABMPolicy):
    """ABMPolicy whose independent-cascade repost probability decays with the post's age:
    p = cascade_p * 0.5 ** (age_minutes / half_life) (attention decay; Wu & Huberman 2007).
    Without `half_life` (or in other modes) it is exactly ABMPolicy."""

    name = "abm"

    def __init__(self, config=None, half_life: float | None = None, **overrides):
        super().__init__(config, **overrides)
        if half_life is not None and half_life <= 0:
            raise ValueError("cascade_half_life must be positive")
        self.half_life = half_life

    def _diffuse(self, sim, obs, has, rng):
        if self.config.diffusion != "independent_cascade" or not self.half_life:
            return super()._diffuse(sim, obs, has, rng)
        from oasis_gym.policies.abm_dynamics import independent_cascade
        from oasis_gym.simulation import FEED_INDEX, ActionArrays

        fresh = has & (obs.feed[..., FEED_INDEX["reposted_by_me"]] == 0)
        age = np.maximum(obs.feed[..., FEED_INDEX["age_minutes"]].astype(np.float64), 0.0)
        p = np.clip(self.config.cascade_p * np.exp2(-age / self.half_life), 0.0, 1.0)
        slot = independent_cascade(rng, fresh, p)
        action = np.where(slot >= 0, self.config.diffusion_action, A.DO_NOTHING).astype(np.int64)
        return ActionArrays(obs.users, action, np.maximum(slot, 0))


class CommentVoter:
    """Adds comment votes with a herding rule to another policy (the ABM never votes on
    comments). An active user votes on one comment in view, not yet voted by them and not
    their own, with probability 1 - (1 - vote_rate)^(such comments); the comment is drawn
    uniformly among them; the vote is up with probability
    sigmoid(up_bias + herd_weight * clip(shown score, -herd_cap, herd_cap)), shown score =
    likes - dislikes, else down (the cap keeps one early lead from deciding every later vote).
    Otherwise the inner policy's action stands (the inner policy is always asked, so its
    random stream does not depend on the votes)."""

    name = "comment_voter"

    def __init__(self, inner, vote_rate: float = 0.1, up_bias: float = 0.0, herd_weight: float = 0.5,
                 herd_cap: float = 3.0):
        if not 0 <= vote_rate <= 1:
            raise ValueError("vote_rate must be in [0, 1]")
        if herd_cap < 0:
            raise ValueError("herd_cap must be >= 0")
        self.inner, self.vote_rate, self.up_bias = inner, vote_rate, up_bias
        self.herd_weight, self.herd_cap = herd_weight, herd_cap

    def reset(self, env, users: np.ndarray, seed: int | None) -> None:
        s_inner, s_own = np.random.SeedSequence(seed).spawn(2)
        self.inner.reset(env, users, int(s_inner.generate_state(1)[0]))
        self.rng = np.random.default_rng(s_own)

    def act(self, env, obs):
        from oasis_gym.simulation import ActionArrays

        acts = self.inner.act(env, obs)
        n = len(obs)
        if n == 0:
            return acts
        pf = getattr(env, "sim", env).platform
        cids = obs.comment_ids
        c = np.maximum(cids, 0)
        feats = obs.comments
        ok = obs.mask_comment.astype(bool) & (feats[..., 2] == 0) & (feats[..., 3] == 0)
        if pf.n_comments:
            ok &= pf.c_author.a[c] != obs.users[:, None]
        noise = self.rng.random(ok.shape)
        u_vote, u_dir = self.rng.random(n), self.rng.random(n)
        vote = ok.any(1) & (u_vote < 1.0 - (1.0 - self.vote_rate) ** ok.sum(1))
        noise[~ok] = -1.0
        slot = noise.argmax(1)
        rows = np.arange(n)
        score = np.clip(feats[rows, slot, 0] - feats[rows, slot, 1], -self.herd_cap, self.herd_cap).astype(np.float64)
        p_up = 1.0 / (1.0 + np.exp(-(self.up_bias + self.herd_weight * score)))
        kind = np.where(u_dir < p_up, A.LIKE_COMMENT, A.DISLIKE_COMMENT)
        col = lambda x, fill: np.full(n, fill, np.int64) if x is None else np.asarray(x, np.int64).copy()  # noqa: E731
        typ, comment = col(acts.type, A.DO_NOTHING), col(acts.comment, 0)
        typ[vote], comment[vote] = kind[vote], slot[vote]
        text = list(acts.text) if acts.text is not None else [None] * n
        stance = (np.asarray(acts.stance, np.float32).copy() if acts.stance is not None
                  else np.full(n, np.nan, np.float32))
        for i in np.flatnonzero(vote).tolist():
            text[i] = None
        stance[vote] = np.nan
        return ActionArrays(acts.users, typ, col(acts.post, 0), comment, col(acts.user, 0), text, stance)

    def state_dict(self) -> dict:
        inner = self.inner.state_dict() if hasattr(self.inner, "state_dict") else {}
        return {"inner": inner, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict) -> None:
        if hasattr(self.inner, "load_state_dict"):
            self.inner.load_state_dict(state.get("inner", {}))
        if "rng" in state:
            self.rng = np.random.default_rng()
            self.rng.bit_generator.state = state["rng"]


class SampledFeed:
    """OASIS's refresh: rank the recommender's top `sample_from` posts for a user, then show
    k of them drawn uniformly at random (OASIS: rec table of max_rec_post_len posts, refresh
    shows refresh_rec_post_count of them). Without it every user of a Reddit run would see
    the same k hottest posts. Everything else is delegated to the wrapped recommender."""

    def __init__(self, inner, sample_from: int) -> None:
        if sample_from < 1:
            raise ValueError("sample_from must be >= 1")
        self.inner, self.sample_from = inner, int(sample_from)
        self.name = f"{inner.name}+sample{self.sample_from}"

    def __getattr__(self, attr):
        return getattr(self.inner, attr)

    def recommend(self, platform, users, k: int, rng: np.random.Generator | None = None) -> np.ndarray:
        top = np.asarray(self.inner.recommend(platform, users, max(k, self.sample_from), rng), dtype=np.int64)
        if top.shape[1] <= k:
            return top[:, :k]
        keys = (rng if rng is not None else np.random.default_rng()).random(top.shape)
        keys[top < 0] = 2.0                                # empty slots last
        pick = np.argsort(keys, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(top, pick, axis=1)


def _llm_routes(policy, n_users: int) -> list[tuple[Any, np.ndarray]]:
    """(LLM policy, its user ids) pairs inside a policy (hybrid routes or a whole LLM policy)."""
    from oasis_gym.policies.hybrid import HybridPolicy

    def is_llm(p) -> bool:
        return callable(getattr(p, "interview", None)) or callable(getattr(getattr(p, "core", None), "interview", None))

    if isinstance(policy, HybridPolicy):
        out = [(p, ids) for p, ids in policy.routes if is_llm(p)]
        if policy.default is not None and is_llm(policy.default):
            routed = np.concatenate([ids for _, ids in policy.routes]) if policy.routes else np.empty(0, np.int64)
            out.append((policy.default, np.setdiff1d(np.arange(n_users), routed)))
        return out
    return [(policy, np.arange(n_users))] if is_llm(policy) else []


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def interview_opinion(answer: str, scale: float = 10.0, topic: str | None = None) -> float:
    """Opinion in [-1, 1] from an interview answer: its first number in [-scale, scale] divided
    by scale, else the lexicon stance of the text (NaN: no signal)."""
    for m in _NUMBER.finditer(answer or ""):
        v = float(m.group())
        if -scale <= v <= scale:
            return v / scale
    from oasis_gym.policies.abm_dynamics import lexicon_stance

    return float(lexicon_stance([answer or ""], topic)[0])


# =========================================================================== scenario kinds

class ScenarioKind:
    """What one kind of experiment adds to a run: population, initial content, per-step
    metrics, figures. One instance per env; `setup` re-seeds it at every reset."""


    def __init__(self, config: Mapping[str, Any]):
        self.config = config
        self.seed = int(config.get("scenario", {}).get("seed", 0))
        self.series: dict[str, list[float]] = {}
        self.steps: list[int] = []

    def population(self) -> Population:
        raise NotImplementedError

    def setup(self, sim) -> None:
        self.series, self.steps = {}, []

    def recorder_options(self) -> dict:
        return {}

    def step_values(self, sim, out) -> dict[str, float]:
        return {}

    def record(self, step: int, values: Mapping[str, float]) -> None:
        self.steps.append(int(step))
        for k, v in values.items():
            self.series.setdefault(k, []).append(float(v))

    def after_step(self, env, out, policy) -> None:
        """Outside the step transaction (e.g. LLM interviews)."""

    def figures(self, sim) -> dict:
        return {}

    def final_values(self, figures: Mapping[str, Any]) -> dict[str, float]:
        return {}


# --------------------------------------------------------------------------- information spread

class InformationSpread(ScenarioKind):

    def population(self) -> Population:
        p = self.config["population"]
        activity = p.get("activity")
        pop = load_twitter_csv(_data_file(p["profiles"]), activity_path=_data_file(activity) if activity else None)
        if p.get("follow_graph", "file") == "generated":   # the file's edges are a star (experiments.graphs)
            from .experiments.graphs import with_generated_graph

            pop = with_generated_graph(pop, float(p.get("graph_mean_following", 3.0)), int(p.get("graph_seed", 0)))
        return pop

    def setup(self, sim) -> None:
        super().setup(sim)
        pf = sim.platform
        originals = np.flatnonzero(pf.p_kind.a[:pf.n_posts] == ORIGINAL)
        if not len(originals):
            raise ValueError("information_spread: the population has no previous post to spread")
        fig = self.config.get("figures", {})
        self.root = int(fig.get("root_post", originals[0]))
        self.t0 = int(pf.p_minute.a[self.root])
        self.mps = sim.clock.minutes_per_step
        self.horizon = int(fig.get("horizon_minutes", 150))
        real = json.loads(_data_file(fig["real"]).read_text(encoding="utf-8"))["series"]
        self.real = {k: np.asarray(real[k], dtype=np.float64) for k in ("scale", "depth", "max_breadth")}

    def recorder_options(self) -> dict:
        return {"tracked_posts": [self.root]}

    def _curves(self, pf, horizon: int) -> F.CascadeCurves:
        return root_cascade_curves(pf, self.root, horizon, self.mps)

    def step_values(self, sim, out) -> dict[str, float]:
        pf = sim.platform
        minute = int(pf.minute) - self.t0 + self.mps   # the end of this step
        c = self._curves(pf, minute)
        values = {}
        for k in ("scale", "depth", "max_breadth"):
            values[f"spread/{k}"] = float(getattr(c, k)[0, -1])
            values[f"spread/real_{k}"] = float(_pad(self.real[k], minute + 1)[minute])
        values["spread/minute"] = float(minute)
        return values

    def figures(self, sim) -> dict:
        pf = sim.platform
        H = self.horizon
        c = self._curves(pf, H)
        sim_c = {k: getattr(c, k)[0].astype(int).tolist() for k in ("scale", "depth", "max_breadth")}
        real_c = {k: _pad(v, H + 1).astype(int).tolist() for k, v in self.real.items()}
        simulated = int(pf.minute) - self.t0  # minutes covered by the completed steps
        window = min(H, simulated)            # a shorter run is scored on the minutes it covers
        errors = {k: nrmse(sim_c[k], real_c[k], window) for k in sim_c}
        fig = self.config.get("figures", {})
        return {
            "root_post": self.root, "root_author": int(pf.p_author.a[self.root]),
            "root_text": pf.p_content[self.root], "horizon_minutes": H, "simulated_minutes": simulated,
            "nrmse": errors, "nrmse_minutes": window, "calibrated_on": list(fig.get("calibrated_on", [])),
            "held_out": list(fig.get("held_out", [])), "fit_minutes": int(fig.get("fit_minutes", 60)),
            "final": {k: v[-1] for k, v in sim_c.items()}, "real_final": {k: v[-1] for k, v in real_c.items()},
            "sim_curves": sim_c, "real_curves": real_c,
        }

    def final_values(self, figures) -> dict[str, float]:
        return {f"spread/nrmse_{k}": v for k, v in figures["nrmse"].items()}


# --------------------------------------------------------------------------- group polarization

class GroupPolarization(ScenarioKind):

    def population(self) -> Population:
        p = self.config["population"]
        files = list(p["groups"])
        names = list(p.get("group_names", [Path(f).stem for f in files]))[:len(files)]
        leanings = [float(x) for x in p.get("leanings", [(-1.0) ** (i + 1) for i in range(len(files))])]
        rng = np.random.default_rng([self.seed, 7])
        parts = []
        for f, lean in zip(files, leanings):
            pop = load_twitter_csv(_data_file(f))
            mag = np.clip(rng.normal(float(p.get("opinion_mean", 0.35)), float(p.get("opinion_sd", 0.15)), pop.n),
                          0.02, 0.98)
            parts.append(dataclasses.replace(pop, opinion=(np.sign(lean) * mag).astype(np.float32)))
        topic = self.config.get("topic", {})
        parts.append(accounts([topic.get("author", "dilemma_host")], "Hosts the discussion."))
        pop = concat_populations(parts, source=f"group_polarization({', '.join(files)})")
        host = pop.n - 1
        pop = _with_edges(pop, np.arange(host), np.full(host, host))  # everyone follows the host
        self.group = np.concatenate([np.full(q.n, g) for g, q in enumerate(parts[:-1])] + [[-1]]).astype(np.int64)
        self.group_names, self.leanings, self.host = names, leanings, host
        return pop

    def setup(self, sim) -> None:
        super().setup(sim)
        pf = sim.platform
        topic = self.config.get("topic", {})
        self.topic_post = int(pf.create_posts(np.array([self.host]), [topic["text"]])[0])
        self.agents = np.flatnonzero(self.group >= 0)
        self.baseline = pf.u_opinion.a[self.agents].astype(np.float64)
        self.interviews = 0
        self.interview_answers = 0

    def step_values(self, sim, out) -> dict[str, float]:
        x = sim.platform.u_opinion.a[self.agents].astype(np.float64)
        values = F.opinion_summary(x, prefix="polarization/")
        values["polarization/to_extreme_share"], values["polarization/to_moderation_share"] = \
            F.opinion_shift_shares(self.baseline, x)
        g = self.group[self.agents]
        for k, name in enumerate(self.group_names):
            sel = g == k
            lean = np.sign(self.leanings[k])
            values[f"polarization/{name}_mean"] = F.opinion_mean(x[sel])
            values[f"polarization/{name}_std"] = F.opinion_std(x[sel])
            values[f"polarization/{name}_shift"] = float(lean * (x[sel].mean() - self.baseline[sel].mean()))
            values[f"polarization/{name}_to_extreme_share"] = F.opinion_shift_shares(self.baseline[sel], x[sel])[0]
        return values

    def after_step(self, env, out, policy) -> None:
        """Interview the LLM users every `interview.every` steps; answers become opinions."""
        every = int(self.config.get("interview", {}).get("every", 5))
        pf = env.sim.platform
        if every <= 0 or pf.step % every:
            return
        routes = _llm_routes(policy, pf.n_users)
        if not routes:
            return
        question = self.config.get("topic", {}).get("question", "")
        for llm, ids in routes:
            ids = np.intersect1d(ids, self.agents)
            if hasattr(llm, "core"):  # an LLMPolicy: the interview is journaled
                answers = [llm.interview(env, f"user_{u}", question) for u in ids.tolist()]
            else:
                answers = [llm.interview(view, question) for view in env.sim.profile_views(ids)]
            values = np.array([interview_opinion(a) for a in answers])
            self.interviews += len(ids)
            ok = np.isfinite(values)
            self.interview_answers += int(ok.sum())
            if ok.any():
                pf.set_opinions(ids[ok], np.clip(values[ok], -1, 1).astype(np.float32))

    def figures(self, sim) -> dict:
        x = sim.platform.u_opinion.a[self.agents].astype(np.float64)
        g = self.group[self.agents]
        groups = {}
        for k, name in enumerate(self.group_names):
            sel = g == k
            groups[name] = {"users": int(sel.sum()), "leaning": self.leanings[k],
                            "initial_mean": float(self.baseline[sel].mean()), "final_mean": float(x[sel].mean()),
                            "shift": self.series.get(f"polarization/{name}_shift", [float("nan")])[-1],
                            "to_extreme_share": self.series.get(f"polarization/{name}_to_extreme_share",
                                                                [float("nan")])[-1]}
        start = F.opinion_summary(self.baseline, prefix="")
        end = F.opinion_summary(x, prefix="")
        return {"topic_post": self.topic_post, "groups": groups, "initial": start, "final": end,
                "to_extreme_share": float(F.opinion_shift_shares(self.baseline, x)[0]),
                "initial_mean_abs": float(np.abs(self.baseline).mean()), "final_mean_abs": float(np.abs(x).mean()),
                "interviews": self.interviews, "interview_answers": self.interview_answers,
                "steps": list(self.steps), "series": {k: list(v) for k, v in self.series.items()}}

    def final_values(self, figures) -> dict[str, float]:
        return {f"polarization/final_{name}_shift": v["shift"] for name, v in figures["groups"].items()}


# --------------------------------------------------------------------------- herd effect

GROUPS = ("up", "control", "down")


class HerdEffect(ScenarioKind):

    def population(self) -> Population:
        p = self.config["population"]
        act = float(p.get("activation", 0.1))
        base = load_reddit_json(_data_file(p["profiles"]), default_activity=act)
        n = int(p.get("users", base.n))
        if n < 1:
            raise ValueError("herd_effect: users must be >= 1")
        if n <= base.n:
            users = base.subset(np.arange(n))
        else:
            extra = synthetic(n - base.n, seed=self.seed + 1, n_core=0)
            users = concat_populations([base, dataclasses.replace(extra, activity=np.full((extra.n, HOURS), act,
                                                                                          np.float32))])
        users = dataclasses.replace(users, activity=np.full((users.n, HOURS), act, np.float32))
        c = self.config.get("content", {})
        self.author, self.voter = users.n, users.n + 1
        return concat_populations([users, accounts([c.get("seed_author", "counterfactual_author"),
                                                    c.get("seed_voter", "counterfactual_voter")])],
                                  source=f"herd_effect(users={n})")

    def setup(self, sim) -> None:
        super().setup(sim)
        pf = sim.platform
        pairs = json.loads(_data_file(self.config.get("content", {}).get("pairs", "counterfactual_36.json"))
                           .read_text(encoding="utf-8"))
        # posted in a seeded random order: the hot list breaks ties by recency, and the file's
        # last 50 pairs (the first front page) hold twice as many down- as up-treated comments
        order = np.random.default_rng([sim.seed if sim.seed is not None else self.seed, 13]).permutation(len(pairs))
        pairs = [pairs[i] for i in order.tolist()]
        texts, bodies, group = [], [], []
        for pair in pairs:
            title, body = pair["RS"].get("title") or "None", pair["RS"].get("selftext") or ""
            texts.append(body if title == "None" else f"{title}\n{body}")
            bodies.append(pair["RC_1"]["body"])
            group.append(pair["RC_1"]["group"])
        group = np.array(group)
        unknown = set(group.tolist()) - set(GROUPS)
        if unknown:
            raise ValueError(f"herd_effect: unknown groups {sorted(unknown)}")
        n = len(pairs)
        posts = pf.create_posts(np.full(n, self.author), texts)
        res, comments = pf.apply(ActionBatch(np.full(n, self.author), np.full(n, A.CREATE_COMMENT), posts, bodies))
        treated = np.flatnonzero(group != "control")
        codes = np.where(group[treated] == "up", A.LIKE_COMMENT, A.DISLIKE_COMMENT)
        res2, _ = pf.apply(ActionBatch(np.full(len(treated), self.voter), codes, comments[treated]))
        if np.any(res != R.OK) or np.any(res2 != R.OK):
            raise RuntimeError("herd_effect: seeding the counterfactual content failed")
        self.posts = {g: posts[group == g] for g in GROUPS}
        self.comments = {g: comments[group == g] for g in GROUPS}
        self.seed_score = {g: float(np.mean((pf.c_likes.a - pf.c_dislikes.a)[self.comments[g]])) for g in GROUPS}

    def step_values(self, sim, out) -> dict[str, float]:
        pf = sim.platform
        values = {}
        for g in GROUPS:
            c, p = self.comments[g], self.posts[g]
            if not len(c):
                continue
            values[f"herd/{g}_mean_score"] = float(np.mean(pf.c_likes.a[c] - pf.c_dislikes.a[c]))
            votes = float(np.mean(pf.c_likes.a[c] + pf.c_dislikes.a[c]))
            values[f"herd/{g}_votes_per_comment"] = votes - (g != "control")   # the seeded vote out
            values[f"herd/{g}_post_score"] = float(np.mean(pf.p_likes.a[p] - pf.p_dislikes.a[p]))
        return values

    def _user_votes(self, pf, g: str) -> tuple[int, int]:
        """(likes, dislikes) users cast on a group's comments: the seeded vote taken out."""
        c = self.comments[g]
        likes, dislikes = int(pf.c_likes.a[c].sum()), int(pf.c_dislikes.a[c].sum())
        return likes - len(c) * (g == "up"), dislikes - len(c) * (g == "down")

    def figures(self, sim) -> dict:
        pf = sim.platform
        final = {g: float(np.mean(pf.c_likes.a[self.comments[g]] - pf.c_dislikes.a[self.comments[g]]))
                 for g in GROUPS}
        votes = {g: self._user_votes(pf, g) for g in GROUPS}
        return {"groups": {g: int(len(self.comments[g])) for g in GROUPS}, "seed_mean_score": self.seed_score,
                "final_mean_score": final, "user_votes": {g: sum(v) for g, v in votes.items()},
                # exposure-free view of herding (Muchnik et al.'s first measure): share of up votes
                "up_vote_share": {g: (v[0] / sum(v) if sum(v) else math.nan) for g, v in votes.items()},
                "votes_per_comment": {g: sum(v) / max(len(self.comments[g]), 1) for g, v in votes.items()},
                "ordered": bool(final["up"] > final["control"] > final["down"]),
                # effect beyond the seeded vote itself (0 without herding, in expectation)
                "up_minus_control_minus_seed": final["up"] - final["control"] - 1.0,
                "control_minus_down_minus_seed": final["control"] - final["down"] - 1.0,
                "post_ids": {g: self.posts[g].tolist() for g in GROUPS},
                "comment_ids": {g: self.comments[g].tolist() for g in GROUPS},
                "steps": list(self.steps),
                "series": {g: self.series.get(f"herd/{g}_mean_score", []) for g in GROUPS}}

    def final_values(self, figures) -> dict[str, float]:
        return {f"herd/final_{g}_mean_score": v for g, v in figures["final_mean_score"].items()}


# --------------------------------------------------------------------------- misinformation

CLASSES = ("news", "rumour")


class Misinformation(ScenarioKind):

    def population(self) -> Population:
        p = self.config["population"]
        pop = synthetic(int(p.get("users", 1_000_000)), seed=self.seed, n_core=int(p.get("core_users", 196)))
        act = np.where(pop.is_core, float(p.get("core_activation", 0.1)), float(p.get("regular_activation", 0.01)))
        pop.activity[:] = act.astype(np.float32)[:, None]
        return pop

    def setup(self, sim) -> None:
        super().setup(sim)
        pf = sim.platform
        pairs = self.config["posts"]
        core = np.flatnonzero(pf.u_is_core.a)
        if len(core) < 2 * len(pairs):
            raise ValueError(f"misinformation: needs {2 * len(pairs)} core users to post the roots, has {len(core)}")
        authors = np.random.default_rng([self.seed, 11]).choice(core, 2 * len(pairs), replace=False)
        texts = [t for q in pairs for t in (q["news"], q["rumour"])]
        stance = np.array([s for q in pairs for s in (q.get("news_stance", 0.4), q.get("rumour_stance", -0.7))],
                          dtype=np.float32)
        label = np.tile([TRUE_LABEL, MISINFO_LABEL], len(pairs)).astype(np.int8)
        self.roots = pf.create_posts(authors, texts, stance=stance, label=label)
        self.domains = [q.get("domain", f"pair{i}") for i, q in enumerate(pairs)]
        self.is_rumour = label == MISINFO_LABEL
        m = len(self.roots)
        self.fam = np.full(pf.n_posts, -1, dtype=np.int64)   # family (root index) of every post
        self.fam[self.roots] = np.arange(m)
        self.n_seen, self.c_seen = pf.n_posts, pf.n_comments
        self.counts = {k: np.zeros(m, np.int64) for k in ("reposts", "quotes", "comments", "impressions", "reach")}
        self.reached = np.zeros((m, pf.n_users), dtype=bool)

    def recorder_options(self) -> dict:
        return {"tracked_posts": self.roots.tolist()}

    def _fold(self, pf, obs) -> np.ndarray:
        """Take in this step's posts, comments and feeds; returns impressions per family."""
        m = len(self.roots)
        new = np.arange(self.n_seen, pf.n_posts)
        kind, root = pf.p_kind.a[new], pf.p_root.a[new]
        share = (kind != ORIGINAL) & (root >= 0)
        fam_new = np.full(len(new), -1, np.int64)
        fam_new[share] = self.fam[root[share]]   # a share's target existed when the step began
        self.fam = np.concatenate([self.fam, fam_new])
        for name, k in (("reposts", 1), ("quotes", 2)):
            f = fam_new[(kind == k) & (fam_new >= 0)]
            self.counts[name] += np.bincount(f, minlength=m)
        cnew = np.arange(self.c_seen, pf.n_comments)
        f = self.fam[pf.c_post.a[cnew]]
        self.counts["comments"] += np.bincount(f[f >= 0], minlength=m)
        self.n_seen, self.c_seen = pf.n_posts, pf.n_comments
        rows, slots = np.nonzero(obs.post_ids >= 0)
        f = self.fam[obs.post_ids[rows, slots]]
        sel = f >= 0
        f, viewers = f[sel], obs.users[rows[sel]]
        imp = np.bincount(f, minlength=m)
        self.counts["impressions"] += imp
        if len(f):
            if self.reached.shape[1] < pf.n_users:
                self.reached = np.pad(self.reached, ((0, 0), (0, pf.n_users - self.reached.shape[1])))
            key = np.unique(f * np.int64(pf.n_users) + viewers)
            fk, vk = key // pf.n_users, key % pf.n_users
            fresh = ~self.reached[fk, vk]
            self.reached[fk[fresh], vk[fresh]] = True
            self.counts["reach"] += np.bincount(fk[fresh], minlength=m)
        return imp

    def step_values(self, sim, out) -> dict[str, float]:
        imp = self._fold(sim.platform, sim.obs)
        posts = self.counts["reposts"] + self.counts["quotes"] + self.counts["comments"]
        values = {}
        for name, sel in (("news", ~self.is_rumour), ("rumour", self.is_rumour)):
            values[f"misinfo/{name}_posts"] = float(posts[sel].sum())
            values[f"misinfo/{name}_impressions"] = float(imp[sel].sum())
            values[f"misinfo/{name}_reach"] = float(self.counts["reach"][sel].sum())
        total = values["misinfo/news_posts"] + values["misinfo/rumour_posts"]
        values["misinfo/rumour_post_share"] = values["misinfo/rumour_posts"] / total if total else math.nan
        return values

    def figures(self, sim) -> dict:
        per_root = []
        for i, r in enumerate(self.roots.tolist()):
            row = {"post_id": r, "domain": self.domains[i // 2], "class": "rumour" if self.is_rumour[i] else "news",
                   "author": int(sim.platform.p_author.a[r])}
            row.update({k: int(v[i]) for k, v in self.counts.items()})
            per_root.append(row)
        totals = {}
        for name, sel in (("news", ~self.is_rumour), ("rumour", self.is_rumour)):
            totals[name] = {k: int(v[sel].sum()) for k, v in self.counts.items()}
            totals[name]["related_posts"] = totals[name]["reposts"] + totals[name]["quotes"] + totals[name]["comments"]
        return {"per_root": per_root, "totals": totals, "users": int(sim.platform.n_users),
                "steps": list(self.steps),
                "series": {k: list(v) for k, v in self.series.items()}}

    def final_values(self, figures) -> dict[str, float]:
        return {f"misinfo/final_{c}_{k}": float(figures["totals"][c][k]) for c in CLASSES
                for k in ("related_posts", "impressions", "reach")}


KINDS: dict[str, type[ScenarioKind]] = {
    "information_spread": InformationSpread,
    "group_polarization": GroupPolarization,
    "herd_effect": HerdEffect,
    "misinformation": Misinformation,
}


# =========================================================================== the scenario

def _env_kwargs(env: Mapping[str, Any]) -> dict:
    kw = {k: v for k, v in env.items() if k != "platform"}
    if kw.get("available_actions") is not None:
        kw["available_actions"] = tuple(int(ACTION_BY_NAME[a]) if isinstance(a, str) else int(a)
                                        for a in kw["available_actions"])
    act = kw.get("activation", "activity")
    if act != "activity":
        kw["activation"] = float(act)
    return kw


@dataclass
class Scenario:
    """A loaded scenario file: `make_env`, `make_policy`, `run`."""

    config: dict
    source: str = "<dict>"

    @property
    def name(self) -> str:
        return str(self.config["scenario"].get("name", Path(self.source).stem))

    @property
    def kind(self) -> str:
        return str(self.config["scenario"]["kind"])

    @property
    def steps(self) -> int:
        return int(self.config["scenario"].get("steps", 50))

    @property
    def seed(self) -> int:
        return int(self.config["scenario"].get("seed", 0))

    def check(self) -> None:
        sc = self.config.get("scenario")
        if not isinstance(sc, Mapping) or sc.get("kind") not in KINDS:
            raise ValueError(f"{self.source}: [scenario] kind must be one of {sorted(KINDS)}")
        platform = self.config.get("env", {}).get("platform", "twitter")
        if platform not in ("twitter", "reddit"):
            raise ValueError(f"{self.source}: env.platform must be 'twitter' or 'reddit', got {platform!r}")
        kind = self.config.get("policy", {}).get("kind", "abm")
        if kind not in ("abm", "hybrid", "llm"):
            raise ValueError(f"{self.source}: policy.kind must be 'abm', 'hybrid' or 'llm', got {kind!r}")

    def with_overrides(self, overrides: Mapping[str, Any] | Sequence[str]) -> "Scenario":
        sets = dict(overrides) if isinstance(overrides, Mapping) else parse_sets(overrides)
        out = Scenario(apply_overrides(self.config, sets), self.source)
        out.check()
        return out

    def make_env(self, **overrides: Any):
        """The env with this scenario's population and `setup`; `env.scenario` holds the kind
        object (ids it seeded, its metrics). Keyword arguments override [env] values."""
        from oasis_gym.envs import reddit_v0, twitter_v0

        handler = KINDS[self.kind](self.config)
        population = handler.population()
        env_cfg = self.config.get("env", {})
        kwargs = {"max_cycles": self.steps, **_env_kwargs(env_cfg), **overrides}
        module = reddit_v0 if env_cfg.get("platform", "twitter") == "reddit" else twitter_v0
        env = module.parallel_env(users=population, setup=handler.setup, **kwargs)
        sample_from = self.config.get("feed", {}).get("sample_from")
        if sample_from:
            env.sim.recsys = SampledFeed(env.sim.recsys, int(sample_from))
        env.scenario = handler
        return env

    def make_policy(self, env):
        """The user policy of [policy]: "abm", "hybrid" (core users -> LLM) or "llm"."""
        spec = self.config.get("policy", {})
        kind = spec.get("kind", "abm")
        abm = _build_abm(spec.get("abm", {}))
        if "comment_votes" in spec:
            abm = CommentVoter(abm, **spec["comment_votes"])
        if kind == "abm":
            return abm
        llm = _build_llm(spec.get("llm", {}))
        if kind == "llm":
            return llm
        from oasis_gym.policies.hybrid import HybridPolicy

        return HybridPolicy([(llm, _core_ids(spec, env.sim.population))], default=abm)

    def run(self, steps: int | None = None, db_path: str | None = None, logdir: str | Path | None = None,
            progress: bool = False, seed: int | None = None, policy=None, overwrite: bool = False) -> dict:
        """Run the scenario and return its figures (JSON-able dict; `summary` holds the
        headline numbers, `run` the bookkeeping). `overwrite` lets it replace an existing
        journal at `db_path`."""
        from oasis_gym.run import simulate

        steps = self.steps if steps is None else int(steps)
        seed = self.seed if seed is None else int(seed)
        t_start = time.perf_counter()
        env = self.make_env(max_cycles=steps, db_path=db_path, overwrite=overwrite)
        handler, sim = env.scenario, env.sim
        record = {"name": self.name, "kind": self.kind, "source": self.source, "config": self.config}
        sim.state_providers["scenario"] = lambda: record
        policy = policy if policy is not None else self.make_policy(env)
        env.reset(seed=seed)
        policy.reset(env, np.arange(sim.platform.n_users), seed)
        setup_s = time.perf_counter() - t_start
        tb = None
        if logdir is not None:
            from .metrics.tensorboard import TensorBoardLogger

            tb = TensorBoardLogger(Path(logdir) / "scenario")
            tb.log_config({"scenario": self.config, "seed": seed, "steps": steps})
            tb._writer.add_text("evidence", evidence_text(evidence(self.config)), global_step=0)
        recorder = _attach_recorder(sim, logdir, handler, self.config.get("metrics", {}))
        tracker = _Tracker(handler, tb)
        sim.step_hooks.append(tracker)
        try:
            summary = simulate(env, policy, steps, seed=seed, reset=False, progress=progress,
                               callback=lambda e, out: handler.after_step(e, out, policy))
            figures = handler.figures(sim)
            figures["summary"] = _headline(self.kind, figures)
            figures["summary"]["evidence"] = figures["evidence"] = evidence(self.config)
            figures["run"] = {"scenario": self.name, "steps": summary.steps, "users": int(sim.platform.n_users),
                              "seed": seed, "policy": self.config.get("policy", {}).get("kind", "abm"),
                              "setup_s": round(setup_s, 2), "run_s": round(summary.seconds, 2),
                              "actions": summary.actions, "db_path": sim.db_path,
                              "logdir": None if logdir is None else str(logdir)}
            _write_final(sim, tb, handler.final_values(figures), figures)
        finally:
            if recorder is not None:
                recorder.finalize()
            if tb is not None:
                tb.close()
            env.close()
        return figures


class _Tracker:
    """Step hook: the scenario's metrics into the step's transaction and TensorBoard."""

    def __init__(self, handler: ScenarioKind, tb) -> None:
        self.handler, self.tb = handler, tb
        self._conn = None

    def __call__(self, sim, out, conn) -> None:
        from .metrics.tensorboard import MetricsTable

        values = self.handler.step_values(sim, out)
        step = int(sim.platform.step)
        self.handler.record(step, values)
        if conn is not self._conn:
            MetricsTable.create_schema(conn)
            self._conn = conn
        MetricsTable.insert(conn, step, values)
        if self.tb is not None:
            self.tb.log_scalars(step, values)


def _attach_recorder(sim, logdir, handler: ScenarioKind, spec: Mapping[str, Any]):
    """The generic MetricsRecorder (action counts, cascades, opinions, exposure ...), if present."""
    if spec.get("enabled", True) is False:
        return None
    try:
        from .metrics.online import MetricsRecorder
    except ImportError:
        return None
    return MetricsRecorder.attach(sim, logdir, every=int(spec.get("every", 1)),
                                  every_full=int(spec.get("every_full", 1)), **handler.recorder_options())


def _write_final(sim, tb, values: Mapping[str, float], figures: Mapping[str, Any]) -> None:
    """Final scalars at the last completed step (metrics table + TensorBoard) and the whole
    figures dict in the journal's meta (`scenario_figures`), in one transaction."""
    from .metrics.tensorboard import MetricsTable

    step = max(int(sim.platform.step) - 1, 0)
    conn = sim.journal.conn
    conn.execute("BEGIN")
    try:
        MetricsTable.create_schema(conn)
        MetricsTable.insert(conn, step, values)
        sim.journal.set_meta(conn, {"scenario_figures": _jsonable(figures)})
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    if tb is not None:
        tb.log_scalars(step, values)


def _jsonable(x):
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _headline(kind: str, f: Mapping[str, Any]) -> dict:
    """The few numbers a scenario is judged by."""
    def r(v):
        return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else round(float(v), 4)

    if kind == "information_spread":
        from .experiments.spread_calibration import split_errors

        return {"nrmse": {k: r(v) for k, v in f["nrmse"].items()},
                "split_nrmse": {k: r(v) for k, v in split_errors(f).items()}, "fit_minutes": f["fit_minutes"],
                "final": f["final"], "real_final": f["real_final"],
                "calibrated_on": f["calibrated_on"], "held_out": f["held_out"]}
    if kind == "group_polarization":
        return {"groups": {g: {k: r(v[k]) for k in ("initial_mean", "final_mean", "shift", "to_extreme_share")}
                           for g, v in f["groups"].items()},
                "initial": {k: r(v) for k, v in f["initial"].items()},
                "final": {k: r(v) for k, v in f["final"].items()},
                "to_extreme_share": r(f["to_extreme_share"])}
    if kind == "herd_effect":
        return {"final_mean_score": {g: r(v) for g, v in f["final_mean_score"].items()}, "ordered": f["ordered"],
                "up_vote_share": {g: r(v) for g, v in f["up_vote_share"].items()},
                "votes_per_comment": {g: r(v) for g, v in f["votes_per_comment"].items()},
                "user_votes": f["user_votes"], "groups": f["groups"]}
    if kind == "misinformation":
        return {c: {k: f["totals"][c][k] for k in ("related_posts", "impressions", "reach")} for c in CLASSES}
    return {}


# =========================================================================== command line

def add_scenario_args(run_parser) -> None:
    """Add --scenario / --set / --figures to the `oasis-gym run` parser."""
    run_parser.add_argument("--scenario", default=None, metavar="NAME",
                            help=f"run a paper scenario ({', '.join(list_scenarios())}) or a scenario .toml file; "
                                 "then only --steps, --seed, --db, --logdir, --no-tensorboard and --quiet apply")
    run_parser.add_argument("--set", dest="scenario_set", action="append", default=[], metavar="KEY=VALUE",
                            help="override a scenario setting (repeatable): users=3600, policy.kind=hybrid, "
                                 "policy.abm.cascade_p=0.5")
    run_parser.add_argument("--figures", default=None, metavar="JSON",
                            help="scenario: write the full figures (curves, series) to this JSON file")


def run_scenario_cli(args) -> int:
    """`oasis-gym run --scenario NAME [--set key=value ...]`: run it, print the headline figures
    as one JSON line (and write them all to --figures)."""
    from .errors import ConfigError

    try:  # a bad name, file or --set is the user's input: one line on the command line
        sets = parse_sets(getattr(args, "scenario_set", None) or [])
        scenario = load_scenario(args.scenario, sets)
    except (FileNotFoundError, KeyError, ValueError) as err:
        raise ConfigError(err.args[0] if err.args else str(err)) from err
    seed = None if "seed" in sets or "scenario.seed" in sets else getattr(args, "seed", None)
    db = getattr(args, "db", None) or f"{scenario.name}.db"
    logdir = None
    if not getattr(args, "no_tensorboard", False):
        logdir = getattr(args, "logdir", None) or str(Path("runs") / Path(db).stem)
    figures = scenario.run(steps=getattr(args, "steps", None), db_path=db, logdir=logdir,
                           progress=not getattr(args, "quiet", False), seed=seed,
                           overwrite=getattr(args, "overwrite", False))
    if getattr(args, "figures", None):
        Path(args.figures).write_text(json.dumps(_jsonable(figures), indent=1), encoding="utf-8")
    print(json.dumps(_jsonable({"scenario": scenario.name, **figures["summary"], **figures["run"]})))
    return 0
