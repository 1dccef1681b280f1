"""misinformation: true news posts and matched rumours among many synthetic users."""

from __future__ import annotations

import numpy as np

from ..metrics.arrays import ratio
from ..platform.platform import MISINFO_LABEL, ORIGINAL, TRUE_LABEL
from ..population import Population, synthetic
from .kind import ScenarioKind

CLASSES = ("news", "rumour")


class Misinformation(ScenarioKind):
    """misinformation: matched true news and rumour posts by core users; measures, per class, the
    related posts (reposts, quotes, comments), impressions and reach (unique users served)."""

    def population(self) -> Population:
        """Synthetic users: ``core_users`` at ``core_activation``, the rest at ``regular_activation``."""
        p = self.config["population"]
        pop = synthetic(int(p.get("users", 1_000_000)), seed=self.seed, n_core=int(p.get("core_users", 196)))
        act = np.where(pop.is_core, float(p.get("core_activation", 0.1)), float(p.get("regular_activation", 0.01)))
        pop.activity[:] = act.astype(np.float32)[:, None]
        return pop

    def setup(self, sim) -> None:
        """Post each pair's news and rumour roots from distinct random core users; reset the counts."""
        super().setup(sim)
        pf = sim.platform
        pairs = self.config["posts"]
        core = np.flatnonzero(pf.u_is_core.a)
        if len(core) < 2 * len(pairs):
            raise ValueError(f"misinformation: needs {2 * len(pairs)} core users to post the roots, has {len(core)}")
        authors = np.random.default_rng([self.seed, 11]).choice(core, 2 * len(pairs), replace=False)
        texts = [t for q in pairs for t in (q["news"], q["rumour"])]
        stance = np.array(
            [s for q in pairs for s in (q.get("news_stance", 0.4), q.get("rumour_stance", -0.7))], dtype=np.float32
        )
        label = np.tile([TRUE_LABEL, MISINFO_LABEL], len(pairs)).astype(np.int8)
        self.roots = pf.create_posts(authors, texts, stance=stance, label=label)
        self.domains = [q.get("domain", f"pair{i}") for i, q in enumerate(pairs)]
        self.is_rumour = label == MISINFO_LABEL
        m = len(self.roots)
        self.fam = np.full(pf.n_posts, -1, dtype=np.int64)  # family (root index) of every post
        self.fam[self.roots] = np.arange(m)
        self.n_seen, self.c_seen = pf.n_posts, pf.n_comments
        self.counts = {k: np.zeros(m, np.int64) for k in ("reposts", "quotes", "comments", "impressions", "reach")}
        self.reached = np.zeros((m, pf.n_users), dtype=bool)

    def recorder_options(self) -> dict:
        """Track the roots' cascades."""
        return {"tracked_posts": self.roots.tolist()}

    def _fold(self, pf, obs) -> np.ndarray:
        """Take in this step's posts, comments and feeds; returns impressions per family."""
        m = len(self.roots)
        new = np.arange(self.n_seen, pf.n_posts)
        kind, root = pf.p_kind.a[new], pf.p_root.a[new]
        share = (kind != ORIGINAL) & (root >= 0)
        fam_new = np.full(len(new), -1, np.int64)
        fam_new[share] = self.fam[root[share]]  # a share's target existed when the step began
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
        """``misinfo/<news|rumour>_posts|impressions|reach`` so far (impressions: this step) and
        ``misinfo/rumour_post_share`` of related posts (NaN with none)."""
        imp = self._fold(sim.platform, sim.obs)
        posts = self.counts["reposts"] + self.counts["quotes"] + self.counts["comments"]
        values = {}
        for name, sel in (("news", ~self.is_rumour), ("rumour", self.is_rumour)):
            values[f"misinfo/{name}_posts"] = float(posts[sel].sum())
            values[f"misinfo/{name}_impressions"] = float(imp[sel].sum())
            values[f"misinfo/{name}_reach"] = float(self.counts["reach"][sel].sum())
        total = values["misinfo/news_posts"] + values["misinfo/rumour_posts"]
        values["misinfo/rumour_post_share"] = ratio(values["misinfo/rumour_posts"], total)
        return values

    def figures(self, sim) -> dict:
        """Per-root counts, per-class totals (with related posts), the series."""
        per_root = []
        for i, r in enumerate(self.roots.tolist()):
            row = {
                "post_id": r,
                "domain": self.domains[i // 2],
                "class": "rumour" if self.is_rumour[i] else "news",
                "author": int(sim.platform.p_author.a[r]),
            }
            row.update({k: int(v[i]) for k, v in self.counts.items()})
            per_root.append(row)
        totals = {}
        for name, sel in (("news", ~self.is_rumour), ("rumour", self.is_rumour)):
            totals[name] = {k: int(v[sel].sum()) for k, v in self.counts.items()}
            totals[name]["related_posts"] = totals[name]["reposts"] + totals[name]["quotes"] + totals[name]["comments"]
        return {
            "per_root": per_root,
            "totals": totals,
            "users": int(sim.platform.n_users),
            "steps": list(self.steps),
            "series": {k: list(v) for k, v in self.series.items()},
        }

    def final_values(self, figures) -> dict[str, float]:
        """``misinfo/final_<class>_<related_posts|impressions|reach>``."""
        return {
            f"misinfo/final_{c}_{k}": float(figures["totals"][c][k])
            for c in CLASSES
            for k in ("related_posts", "impressions", "reach")
        }
