"""The effect each scenario kind measures, from one run's figures, beyond the seeded treatment.

* herd_effect: the users' own votes on the treated comments (the seeded vote taken out):
  mean user score (likes - dislikes cast by users) per comment in the up / control / down
  groups and the differences; the expected ordering is up > control > down.
* group_polarization: change in Esteban-Ray polarization and in mean |opinion| from the
  initial to the final opinions, and each group's shift in its own leaning's direction.
* misinformation: rumour minus news, for reach (unique users served a post of the family)
  and related posts (reposts + quotes + comments); expected ordering rumour > news.
* information_spread: NRMSE of scale / depth / max breadth against the real cascade, in
  sample (the calibration window of the scale curve) and held out (the later minutes, all
  three curves); see cascades.split_errors and spread_calibration.

Every function returns a flat {name: float} (NaN when undefined), so a sweep can average it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..metrics.arrays import ratio
from .cascades import split_errors
from .herd import GROUPS

__all__ = ["effects", "effect_label", "ORDERINGS", "HEADLINE", "PAPER"]

# effect names whose per-seed values must be strictly decreasing for "the expected ordering"
ORDERINGS: dict[str, tuple[str, ...]] = {
    "herd_effect": ("user_score_up", "user_score_control", "user_score_down"),
    "misinformation": ("rumour_related_posts", "news_related_posts"),
    "group_polarization": (),
    "information_spread": (),
}

# the effect a sweep plots by default, per kind
HEADLINE: dict[str, tuple[str, ...]] = {
    "herd_effect": ("user_up_minus_control", "user_control_minus_down", "up_share_lift_up_vs_control"),
    "group_polarization": ("d_esteban_ray", "d_mean_abs_opinion"),
    "misinformation": ("reach_rumour_minus_news", "related_rumour_minus_news"),
    "information_spread": ("heldout_nrmse_scale", "heldout_nrmse_depth", "heldout_nrmse_max_breadth"),
}

# what the paper reports for the same quantity (text: the number and what it means)
PAPER: dict[str, str] = {
    "herd_effect": (
        "OASIS (arXiv:2411.11581, Sec. 4.3): LLM users' comment scores ordered up > control > down "
        "(qualitative, figure). Humans (Muchnik et al. 2013, Science): an up-treated comment was 32% "
        "more likely to get an up-vote from its next voter and ended with 25% higher mean rating; "
        "down-treatment was offset by corrections"
    ),
    "group_polarization": (
        "OASIS (Sec. 4.2): LLM users' opinions grow more extreme over the discussion "
        "(qualitative, figure; stronger with an uncensored model)"
    ),
    "misinformation": (
        "OASIS (Sec. 5): rumours reach more users and draw more related posts than true news "
        "(qualitative, figure); Vosoughi et al. 2018 (Science): false news reached more people "
        "than the truth on Twitter 2006-2017"
    ),
    "information_spread": "OASIS (Sec. 4.1): NRMSE of scale around 0.3 over its Twitter15/16 cascades (out of sample)",
}


# an effect's unit, by the first pattern its name contains (a plot's y-label)
_UNITS = (
    ("nrmse", "NRMSE, relative to the real curve"),
    ("share_lift", "relative change, 0.1 = +10%"),
    ("share", "share, 0-1"),
    ("score", "likes - dislikes per comment"),
    ("votes_per_comment", "votes per comment"),
    ("reach", "users reached"),
    ("related", "related posts"),
    ("esteban_ray", "Esteban-Ray index"),
    ("bimodality", "bimodality coefficient"),
    ("opinion", "opinion units"),
    ("shift", "opinion units"),
)


def effect_label(name: str) -> str:
    """An effect's name in words with its unit: "reach_rumour_minus_news" ->
    "reach rumour minus news (users reached)"."""
    unit = next((u for key, u in _UNITS if key in name), "as measured")
    words = name.replace("d_", "change in ", 1) if name.startswith("d_") else name
    return f"{words.replace('_', ' ')} ({unit})"


def _f(x: Any) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return math.nan
    return v if math.isfinite(v) else math.nan


def herd(fig: Mapping[str, Any]) -> dict[str, float]:
    final, seed = fig["final_mean_score"], fig["seed_mean_score"]
    user = {g: _f(final[g]) - _f(seed[g]) for g in GROUPS}
    out = {f"user_score_{g}": user[g] for g in GROUPS}
    out["user_up_minus_control"] = user["up"] - user["control"]
    out["user_control_minus_down"] = user["control"] - user["down"]
    for g in GROUPS:
        out[f"up_vote_share_{g}"] = _f(fig["up_vote_share"][g])
        out[f"votes_per_comment_{g}"] = _f(fig["votes_per_comment"][g])
    out["final_up_minus_control"] = _f(final["up"]) - _f(final["control"])
    # Muchnik et al.'s measure: how much likelier an up-vote is on up-treated than on control
    # comments (theirs: the next voter, +32%; ours: all later user votes)
    out["up_share_lift_up_vs_control"] = (
        out["up_vote_share_up"] / out["up_vote_share_control"] - 1.0 if out["up_vote_share_control"] else math.nan
    )
    return out


def polarization(fig: Mapping[str, Any]) -> dict[str, float]:
    i, f = fig["initial"], fig["final"]
    out = {
        "d_esteban_ray": _f(f["esteban_ray"]) - _f(i["esteban_ray"]),
        "d_mean_abs_opinion": _f(fig.get("final_mean_abs")) - _f(fig.get("initial_mean_abs")),
        "d_bimodality": _f(f["bimodality"]) - _f(i["bimodality"]),
        "to_extreme_share": _f(fig["to_extreme_share"]),
    }
    for name, g in fig["groups"].items():
        out[f"shift_{name}"] = _f(g["shift"])
    return out


def misinformation(fig: Mapping[str, Any]) -> dict[str, float]:
    t = fig["totals"]
    out = {}
    for c in ("news", "rumour"):
        out[f"{c}_reach"] = _f(t[c]["reach"])
        out[f"{c}_related_posts"] = _f(t[c]["related_posts"])
    out["reach_rumour_minus_news"] = out["rumour_reach"] - out["news_reach"]
    out["related_rumour_minus_news"] = out["rumour_related_posts"] - out["news_related_posts"]
    tot = out["rumour_reach"] + out["news_reach"]
    out["rumour_reach_share"] = ratio(out["rumour_reach"], tot)
    return out


def spread(fig: Mapping[str, Any]) -> dict[str, float]:
    out = {f"nrmse_{k}": _f(v) for k, v in fig["nrmse"].items()}
    out.update(split_errors(fig))
    return out


_BY_KIND = {
    "herd_effect": herd,
    "group_polarization": polarization,
    "misinformation": misinformation,
    "information_spread": spread,
}


def effects(kind: str, figures: Mapping[str, Any]) -> dict[str, float]:
    """The per-run effects of a scenario kind (see the module docstring)."""
    try:
        return _BY_KIND[kind](figures)
    except KeyError as err:
        if kind not in _BY_KIND:
            raise ValueError(f"no effects defined for scenario kind {kind!r}") from err
        raise
