"""herd_effect: Muchnik-style first-vote treatment of comments (up / control / down)."""

from __future__ import annotations

import dataclasses
import json

import numpy as np

from ..actions import ActionType as A
from ..actions import Result as R
from ..metrics.arrays import ratio
from ..metrics.herd import group_mean_scores
from ..platform.platform import ActionBatch
from ..population import HOURS, Population, load_reddit_json, synthetic
from .config import _data_file
from .kind import ScenarioKind
from .populations import accounts, concat_populations

GROUPS = ("up", "control", "down")


class HerdEffect(ScenarioKind):
    """herd_effect: Reddit users vote on comments whose first vote was seeded up, down or not at all
    (Muchnik et al. 2013); measures each group's mean score (likes - dislikes)."""

    def population(self) -> Population:
        """The Reddit profiles (cut to, or padded with synthetic users to, ``users``), all at one
        activation, plus the seed author and the seed voter accounts."""
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
            users = concat_populations(
                [base, dataclasses.replace(extra, activity=np.full((extra.n, HOURS), act, np.float32))]
            )
        users = dataclasses.replace(users, activity=np.full((users.n, HOURS), act, np.float32))
        c = self.config.get("content", {})
        self.author, self.voter = users.n, users.n + 1
        return concat_populations(
            [
                users,
                accounts([c.get("seed_author", "counterfactual_author"), c.get("seed_voter", "counterfactual_voter")]),
            ],
            source=f"herd_effect(users={n})",
        )

    def setup(self, sim) -> None:
        """Post the counterfactual pairs in a seeded order, comment on each, and cast the seeded
        first vote (up or down) on the treated comments."""
        super().setup(sim)
        pf = sim.platform
        pairs = json.loads(
            _data_file(self.config.get("content", {}).get("pairs", "counterfactual_36.json")).read_text(
                encoding="utf-8"
            )
        )
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
        self.seed_score = self._mean_scores(pf)

    def step_values(self, sim, out) -> dict[str, float]:
        """Per group: ``herd/<g>_mean_score`` (comments), ``_votes_per_comment`` (user votes, the
        seeded one out) and ``_post_score``; empty groups are left out."""
        pf = sim.platform
        values = {}
        score = self._mean_scores(pf)
        post_score = group_mean_scores(pf.p_likes.a, pf.p_dislikes.a, self.posts)
        for g in GROUPS:
            c = self.comments[g]
            if not len(c):
                continue
            values[f"herd/{g}_mean_score"] = score[g]
            votes = float(np.mean(pf.c_likes.a[c] + pf.c_dislikes.a[c]))
            values[f"herd/{g}_votes_per_comment"] = votes - (g != "control")  # the seeded vote out
            values[f"herd/{g}_post_score"] = post_score[g]
        return values

    def _mean_scores(self, pf) -> dict[str, float]:
        """Mean likes - dislikes of each group's comments (NaN for an empty group)."""
        return group_mean_scores(pf.c_likes.a, pf.c_dislikes.a, self.comments)

    def _user_votes(self, pf, g: str) -> tuple[int, int]:
        """(likes, dislikes) users cast on a group's comments: the seeded vote taken out."""
        c = self.comments[g]
        likes, dislikes = int(pf.c_likes.a[c].sum()), int(pf.c_dislikes.a[c].sum())
        return likes - len(c) * (g == "up"), dislikes - len(c) * (g == "down")

    def figures(self, sim) -> dict:
        """Seeded and final mean scores, the users' own votes and up-vote share per group (NaN with
        no vote), whether up > control > down, the effect beyond the seeded vote, the series."""
        pf = sim.platform
        final = self._mean_scores(pf)
        votes = {g: self._user_votes(pf, g) for g in GROUPS}
        return {
            "groups": {g: int(len(self.comments[g])) for g in GROUPS},
            "seed_mean_score": self.seed_score,
            "final_mean_score": final,
            "user_votes": {g: sum(v) for g, v in votes.items()},
            # exposure-free view of herding (Muchnik et al.'s first measure): share of up votes
            "up_vote_share": {g: ratio(v[0], sum(v)) for g, v in votes.items()},
            "votes_per_comment": {g: sum(v) / max(len(self.comments[g]), 1) for g, v in votes.items()},
            "ordered": bool(final["up"] > final["control"] > final["down"]),
            # effect beyond the seeded vote itself (0 without herding, in expectation)
            "up_minus_control_minus_seed": final["up"] - final["control"] - 1.0,
            "control_minus_down_minus_seed": final["control"] - final["down"] - 1.0,
            "post_ids": {g: self.posts[g].tolist() for g in GROUPS},
            "comment_ids": {g: self.comments[g].tolist() for g in GROUPS},
            "steps": list(self.steps),
            "series": {g: self.series.get(f"herd/{g}_mean_score", []) for g in GROUPS},
        }

    def final_values(self, figures) -> dict[str, float]:
        """``herd/final_<g>_mean_score`` per group."""
        return {f"herd/final_{g}_mean_score": v for g, v in figures["final_mean_score"].items()}
