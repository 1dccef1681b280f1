"""A loaded scenario: the env with its population and setup, the policy, the run and its records."""

from __future__ import annotations

import math
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from oasis_gym.app.run import simulate
from oasis_gym.envs import reddit_v0, twitter_v0

from ..actions import ACTION_BY_NAME
from ..metrics.online import MetricsRecorder
from ..metrics.tensorboard import MetricsTable, TensorBoardLogger
from ..policies.hybrid import HybridPolicy
from ..policies.wrappers import CommentVoter
from ..recsys.sampled import SampledFeed
from .cascades import split_errors
from .config import apply_overrides, check_settings, parse_sets, scenario_path
from .evidence import evidence, evidence_text
from .herd import HerdEffect
from .kind import ScenarioKind
from .misinformation import CLASSES, Misinformation
from .polarization import GroupPolarization
from .policies import _build_abm, _build_llm
from .populations import _core_ids
from .spread import InformationSpread


def load_scenario(name_or_path: str | Path, overrides: Mapping[str, Any] | Sequence[str] | None = None) -> Scenario:
    """Load a shipped scenario (by name) or a .toml file, with optional overrides."""
    path = scenario_path(name_or_path)
    with open(path, "rb") as f:
        config = tomllib.load(f)
    scenario = Scenario(config, str(path))
    scenario.check()
    return scenario.with_overrides(overrides) if overrides else scenario


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
        kw["available_actions"] = tuple(
            int(ACTION_BY_NAME[a]) if isinstance(a, str) else int(a) for a in kw["available_actions"]
        )
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
        """``scenario.name``, else the file's stem."""
        return str(self.config["scenario"].get("name", Path(self.source).stem))

    @property
    def kind(self) -> str:
        """``scenario.kind``: the experiment (a key of KINDS)."""
        return str(self.config["scenario"]["kind"])

    @property
    def steps(self) -> int:
        """``scenario.steps`` (default 50)."""
        return int(self.config["scenario"].get("steps", 50))

    @property
    def seed(self) -> int:
        """``scenario.seed`` (default 0)."""
        return int(self.config["scenario"].get("seed", 0))

    def check(self) -> None:
        """Raise ValueError on an unknown kind, platform or policy kind, or a setting of the
        wrong type or out of range (`config.SETTINGS`)."""
        sc = self.config.get("scenario")
        if not isinstance(sc, Mapping) or sc.get("kind") not in KINDS:
            raise ValueError(f"{self.source}: [scenario] kind must be one of {sorted(KINDS)}")
        platform = self.config.get("env", {}).get("platform", "twitter")
        if platform not in ("twitter", "reddit"):
            raise ValueError(f"{self.source}: env.platform must be 'twitter' or 'reddit', got {platform!r}")
        kind = self.config.get("policy", {}).get("kind", "abm")
        if kind not in ("abm", "hybrid", "llm"):
            raise ValueError(f"{self.source}: policy.kind must be 'abm', 'hybrid' or 'llm', got {kind!r}")
        check_settings(self.config)  # types and ranges (config.SETTINGS): a ConfigError, a ValueError

    def with_overrides(self, overrides: Mapping[str, Any] | Sequence[str]) -> Scenario:
        """A checked copy with ``--set``-style overrides (a mapping or KEY=VALUE strings) applied."""
        sets = dict(overrides) if isinstance(overrides, Mapping) else parse_sets(overrides)
        out = Scenario(apply_overrides(self.config, sets), self.source)
        out.check()
        return out

    def make_env(self, **overrides: Any):
        """The env with this scenario's population and `setup`; `env.scenario` holds the kind
        object (ids it seeded, its metrics). Keyword arguments override [env] values."""

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
        return HybridPolicy([(llm, _core_ids(spec, env.sim.population))], default=abm)

    def run(
        self,
        steps: int | None = None,
        db_path: str | None = None,
        logdir: str | Path | None = None,
        progress: bool = False,
        seed: int | None = None,
        policy=None,
        overwrite: bool = False,
    ) -> dict:
        """Run the scenario and return its figures (JSON-able dict; `summary` holds the
        headline numbers, `run` the bookkeeping). `overwrite` lets it replace an existing
        journal at `db_path`."""

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
            tb = TensorBoardLogger(Path(logdir) / "scenario")
            tb.log_config({"scenario": self.config, "seed": seed, "steps": steps})
            tb._writer.add_text("evidence", evidence_text(evidence(self.config)), global_step=0)
        recorder = _attach_recorder(sim, logdir, handler, self.config.get("metrics", {}))
        tracker = _Tracker(handler, tb)
        sim.step_hooks.append(tracker)
        try:
            summary = simulate(
                env,
                policy,
                steps,
                seed=seed,
                reset=False,
                progress=progress,
                callback=lambda e, out: handler.after_step(e, out, policy),
            )
            figures = handler.figures(sim)
            figures["summary"] = _headline(self.kind, figures)
            figures["summary"]["evidence"] = figures["evidence"] = evidence(self.config)
            figures["run"] = {
                "scenario": self.name,
                "steps": summary.steps,
                "users": int(sim.platform.n_users),
                "seed": seed,
                "policy": self.config.get("policy", {}).get("kind", "abm"),
                "setup_s": round(setup_s, 2),
                "run_s": round(summary.seconds, 2),
                "actions": summary.actions,
                "db_path": sim.db_path,
                "logdir": None if logdir is None else str(logdir),
            }
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
    """The generic MetricsRecorder (action counts, cascades, opinions, exposure ...), unless disabled."""
    if spec.get("enabled", True) is False:
        return None
    return MetricsRecorder.attach(
        sim,
        logdir,
        every=int(spec.get("every", 1)),
        every_full=int(spec.get("every_full", 1)),
        **handler.recorder_options(),
    )


def _write_final(sim, tb, values: Mapping[str, float], figures: Mapping[str, Any]) -> None:
    """Final scalars at the last completed step (metrics table + TensorBoard) and the whole
    figures dict in the journal's meta (`scenario_figures`), in one transaction."""
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
        return {
            "nrmse": {k: r(v) for k, v in f["nrmse"].items()},
            "split_nrmse": {k: r(v) for k, v in split_errors(f).items()},
            "fit_minutes": f["fit_minutes"],
            "final": f["final"],
            "real_final": f["real_final"],
            "calibrated_on": f["calibrated_on"],
            "held_out": f["held_out"],
        }
    if kind == "group_polarization":
        return {
            "groups": {
                g: {k: r(v[k]) for k in ("initial_mean", "final_mean", "shift", "to_extreme_share")}
                for g, v in f["groups"].items()
            },
            "initial": {k: r(v) for k, v in f["initial"].items()},
            "final": {k: r(v) for k, v in f["final"].items()},
            "to_extreme_share": r(f["to_extreme_share"]),
        }
    if kind == "herd_effect":
        return {
            "final_mean_score": {g: r(v) for g, v in f["final_mean_score"].items()},
            "ordered": f["ordered"],
            "up_vote_share": {g: r(v) for g, v in f["up_vote_share"].items()},
            "votes_per_comment": {g: r(v) for g, v in f["votes_per_comment"].items()},
            "user_votes": f["user_votes"],
            "groups": f["groups"],
        }
    if kind == "misinformation":
        return {c: {k: f["totals"][c][k] for k in ("related_posts", "impressions", "reach")} for c in CLASSES}
    return {}
