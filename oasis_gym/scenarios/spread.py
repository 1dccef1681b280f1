"""information_spread: one real Twitter15 cascade re-run on its real users, scored by NRMSE."""

from __future__ import annotations

import json

import numpy as np

from ..metrics import formulas as F
from ..platform.platform import ORIGINAL
from ..population import Population, load_twitter_csv
from .cascades import CURVES, nrmse, pad_curve, root_cascade_curves
from .config import _data_file
from .graphs import with_generated_graph
from .kind import ScenarioKind


class InformationSpread(ScenarioKind):
    """information_spread: a real Twitter15 cascade re-run on its users; measures the root's
    scale, depth and max-breadth curves against the real ones (NRMSE)."""

    def population(self) -> Population:
        """The cascade's users from the CSV, optionally with a generated follow graph (graphs.py)."""
        p = self.config["population"]
        activity = p.get("activity")
        pop = load_twitter_csv(_data_file(p["profiles"]), activity_path=_data_file(activity) if activity else None)
        if p.get("follow_graph", "file") == "generated":  # the file's edges are a star (graphs.py)
            pop = with_generated_graph(pop, float(p.get("graph_mean_following", 3.0)), int(p.get("graph_seed", 0)))
        return pop

    def setup(self, sim) -> None:
        """Pick the root post (``figures.root_post``, else the first original) and read the real curves."""
        super().setup(sim)
        pf = sim.platform
        originals = np.flatnonzero(pf.p_kind.a[: pf.n_posts] == ORIGINAL)
        if not len(originals):
            raise ValueError("information_spread: the population has no previous post to spread")
        fig = self.config.get("figures", {})
        self.root = int(fig.get("root_post", originals[0]))
        self.t0 = int(pf.p_minute.a[self.root])
        self.mps = sim.clock.minutes_per_step
        self.horizon = int(fig.get("horizon_minutes", 150))
        real = json.loads(_data_file(fig["real"]).read_text(encoding="utf-8"))["series"]
        self.real = {k: np.asarray(real[k], dtype=np.float64) for k in CURVES}

    def recorder_options(self) -> dict:
        """Track the root's cascade."""
        return {"tracked_posts": [self.root]}

    def _curves(self, pf, horizon: int) -> F.CascadeCurves:
        return root_cascade_curves(pf, self.root, horizon, self.mps)

    def step_values(self, sim, out) -> dict[str, float]:
        """``spread/<stat>`` and ``spread/real_<stat>`` at the end of this step, ``spread/minute``."""
        pf = sim.platform
        minute = int(pf.minute) - self.t0 + self.mps  # the end of this step
        c = self._curves(pf, minute)
        values = {}
        for k in CURVES:
            values[f"spread/{k}"] = float(getattr(c, k)[0, -1])
            values[f"spread/real_{k}"] = float(pad_curve(self.real[k], minute + 1)[minute])
        values["spread/minute"] = float(minute)
        return values

    def figures(self, sim) -> dict:
        """Simulated and real curves over the horizon and their NRMSE over the simulated minutes."""
        pf = sim.platform
        H = self.horizon
        c = self._curves(pf, H)
        sim_c = {k: getattr(c, k)[0].astype(int).tolist() for k in CURVES}
        real_c = {k: pad_curve(v, H + 1).astype(int).tolist() for k, v in self.real.items()}
        simulated = int(pf.minute) - self.t0  # minutes covered by the completed steps
        window = min(H, simulated)  # a shorter run is scored on the minutes it covers
        errors = {k: nrmse(sim_c[k], real_c[k], window) for k in sim_c}
        fig = self.config.get("figures", {})
        return {
            "root_post": self.root,
            "root_author": int(pf.p_author.a[self.root]),
            "root_text": pf.p_content[self.root],
            "horizon_minutes": H,
            "simulated_minutes": simulated,
            "nrmse": errors,
            "nrmse_minutes": window,
            "calibrated_on": list(fig.get("calibrated_on", [])),
            "held_out": list(fig.get("held_out", [])),
            "fit_minutes": int(fig.get("fit_minutes", 60)),
            "final": {k: v[-1] for k, v in sim_c.items()},
            "real_final": {k: v[-1] for k, v in real_c.items()},
            "sim_curves": sim_c,
            "real_curves": real_c,
        }

    def final_values(self, figures) -> dict[str, float]:
        """``spread/nrmse_<stat>``."""
        return {f"spread/nrmse_{k}": v for k, v in figures["nrmse"].items()}
