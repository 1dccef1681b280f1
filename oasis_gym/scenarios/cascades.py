"""Cascade measures of a run: every post's cascade root, one root's per-minute curves, NRMSE
(whole window, a window, and the in-sample / held-out split of spread_calibration)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..metrics import formulas as F
from ..platform.platform import ORIGINAL
from ..platform.store import unpack_keys

#: the per-minute curves of a cascade, as in CascadeCurves and the real Twitter15 data
CURVES = ("scale", "depth", "max_breadth")


def cascade_tops(pf, upto: int | None = None) -> np.ndarray:
    """Cascade root (an original post) of every post: shares point at what they share (a
    repost at its root, a quote at the quoted post), followed up to an original by pointer
    jumping (O(posts x log depth))."""
    n = pf.n_posts if upto is None else int(upto)
    root = pf.p_root.a[:n]
    return F.tree_depths(np.where((pf.p_kind.a[:n] != ORIGINAL) & (root >= 0), root, -1))[0]


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
    """sqrt(mean((sim - real)^2)) / real[horizon] over minutes 0..horizon (``window_nrmse``);
    both curves are padded with their last value when shorter."""
    return window_nrmse(sim, real, 0, horizon)


def window_nrmse(sim: Sequence[float], real: Sequence[float], start: int, end: int) -> float:
    """sqrt(mean((sim - real)^2)) over minutes start..end (inclusive) / real[end]; curves
    shorter than end+1 are padded with their last value. NaN when real[end] is 0 or the
    window is empty."""
    if end < start or start < 0:
        return float("nan")
    s, r = pad_curve(sim, end + 1)[start:], pad_curve(real, end + 1)[start:]
    return float(np.sqrt(np.mean((s - r) ** 2)) / r[-1]) if r[-1] else float("nan")


def split_errors(fig: Mapping[str, Any]) -> dict[str, float]:
    """In-sample (minutes 0..fit of scale) and held-out (fit..end of every curve) NRMSE of one
    information-spread run's figures; `end` is the scored window (nrmse_minutes)."""
    fit = int(fig.get("fit_minutes", 60))
    end = int(fig.get("nrmse_minutes", fig.get("horizon_minutes", 150)))
    sim, real = fig["sim_curves"], fig["real_curves"]
    out = {"insample_nrmse_scale": window_nrmse(sim["scale"], real["scale"], 0, min(fit, end))}
    for k in CURVES:
        out[f"heldout_nrmse_{k}"] = window_nrmse(sim[k], real[k], fit, end) if end > fit else math.nan
    out["final_depth"] = float(sim["depth"][-1])
    return out


def pad_curve(x: Sequence[float], n: int) -> np.ndarray:
    """The first ``n`` values of a per-minute curve as floats, padded with its last value (0 for
    an empty curve): a cascade stays as it was after its last recorded minute."""
    a = np.asarray(x, dtype=np.float64)
    if len(a) >= n:
        return a[:n]
    return np.r_[a, np.full(n - len(a), a[-1] if len(a) else 0.0)]
