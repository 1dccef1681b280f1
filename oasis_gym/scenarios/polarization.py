"""group_polarization: two groups of opposite leaning discuss a choice dilemma."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np

from ..metrics import formulas as F
from ..population import Population, load_twitter_csv
from ..sim.content import lexicon_stance
from .config import _data_file
from .kind import ScenarioKind
from .policies import _llm_routes
from .populations import _with_edges, accounts, concat_populations


class GroupPolarization(ScenarioKind):
    """group_polarization: groups of opposite leaning discuss a dilemma; measures the opinion
    distribution (mean, std, bimodality, Esteban-Ray) and each group's shift toward its leaning."""

    def population(self) -> Population:
        """One group per profile file, opinions drawn around the group's leaning, plus a host
        account everyone follows."""
        p = self.config["population"]
        files = list(p["groups"])
        names = list(p.get("group_names", [Path(f).stem for f in files]))[: len(files)]
        leanings = [float(x) for x in p.get("leanings", [(-1.0) ** (i + 1) for i in range(len(files))])]
        rng = np.random.default_rng([self.seed, 7])
        parts = []
        for f, lean in zip(files, leanings):
            pop = load_twitter_csv(_data_file(f))
            mag = np.clip(
                rng.normal(float(p.get("opinion_mean", 0.35)), float(p.get("opinion_sd", 0.15)), pop.n), 0.02, 0.98
            )
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
        """Post the dilemma from the host; the agents' opinions now are the baseline."""
        super().setup(sim)
        pf = sim.platform
        topic = self.config.get("topic", {})
        self.topic_post = int(pf.create_posts(np.array([self.host]), [topic["text"]])[0])
        self.agents = np.flatnonzero(self.group >= 0)
        self.baseline = pf.u_opinion.a[self.agents].astype(np.float64)
        self.interviews = 0
        self.interview_answers = 0

    def step_values(self, sim, out) -> dict[str, float]:
        """``polarization/*``: the agents' opinion summary and shift shares against the baseline,
        and per group mean, std, shift toward its leaning and share moved to the extreme."""
        x = sim.platform.u_opinion.a[self.agents].astype(np.float64)
        values = F.opinion_summary(x, prefix="polarization/")
        values["polarization/to_extreme_share"], values["polarization/to_moderation_share"] = F.opinion_shift_shares(
            self.baseline, x
        )
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
        """Initial and final opinion summaries, per-group shifts, mean |opinion|, interviews, series."""
        x = sim.platform.u_opinion.a[self.agents].astype(np.float64)
        g = self.group[self.agents]
        groups = {}
        for k, name in enumerate(self.group_names):
            sel = g == k
            groups[name] = {
                "users": int(sel.sum()),
                "leaning": self.leanings[k],
                "initial_mean": float(self.baseline[sel].mean()),
                "final_mean": float(x[sel].mean()),
                "shift": self.series.get(f"polarization/{name}_shift", [float("nan")])[-1],
                "to_extreme_share": self.series.get(f"polarization/{name}_to_extreme_share", [float("nan")])[-1],
            }
        start = F.opinion_summary(self.baseline, prefix="")
        end = F.opinion_summary(x, prefix="")
        return {
            "topic_post": self.topic_post,
            "groups": groups,
            "initial": start,
            "final": end,
            "to_extreme_share": float(F.opinion_shift_shares(self.baseline, x)[0]),
            "initial_mean_abs": float(np.abs(self.baseline).mean()),
            "final_mean_abs": float(np.abs(x).mean()),
            "interviews": self.interviews,
            "interview_answers": self.interview_answers,
            "steps": list(self.steps),
            "series": {k: list(v) for k, v in self.series.items()},
        }

    def final_values(self, figures) -> dict[str, float]:
        """``polarization/final_<group>_shift`` per group."""
        return {f"polarization/final_{name}_shift": v["shift"] for name, v in figures["groups"].items()}


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def interview_opinion(answer: str, scale: float = 10.0, topic: str | None = None) -> float:
    """Opinion in [-1, 1] from an interview answer: its first number in [-scale, scale] divided
    by scale, else the lexicon stance of the text (NaN: no signal)."""
    for m in _NUMBER.finditer(answer or ""):
        v = float(m.group())
        if -scale <= v <= scale:
            return v / scale
    return float(lexicon_stance([answer or ""], topic)[0])
