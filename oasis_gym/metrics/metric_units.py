"""What each metric tag measures, in words and with its unit: the report's titles and y-labels.

`metric_label("exposure/impressions")` -> ("Exposure of the served feeds: impressions",
"impressions (count)"). A y-label ends with its unit in parentheses; a count's with
"(count)" (`oasis_gym.figures.COUNT`), which puts its axis on whole numbers. A tag this page
does not know gets "(unit unknown)", and the report's test fails on any tag a real run writes
that ends up there.
"""

from __future__ import annotations

import re

from oasis_gym.figures import COUNT

__all__ = ["metric_label", "panel_key", "legend_label", "group_of", "GROUP_WORDS", "UNKNOWN_UNIT"]

UNKNOWN_UNIT = "(unit unknown)"

#: the groups' words (figure titles)
GROUP_WORDS = {
    "actions": "Actions",
    "activity": "Activity",
    "cascade": "Cascades",
    "engagement": "Engagement",
    "exposure": "Exposure of the served feeds",
    "herd": "Herd effect",
    "invalid": "Rejected actions",
    "llm": "LLM users",
    "network": "Follow network",
    "opinion": "Opinions",
}
_SHARE = "(0-1)"
_CORR = "correlation (-1 to 1)"
# tag (without a tracked cascade's "topK/" or "post_P/") -> (title words, y-label)
_LABELS = {
    "activity/active_users": ("users served a feed", f"users {COUNT}"),
    "activity/acting_users": ("users who acted", f"users {COUNT}"),
    "activity/posts_created": ("posts created", f"posts {COUNT}"),
    "activity/shares_created": ("reposts and quotes created", f"posts {COUNT}"),
    "activity/comments_created": ("comments created", f"comments {COUNT}"),
    "activity/posts_total": ("posts on the platform", f"posts {COUNT}"),
    "engagement/rate": ("post interactions per impression", f"interactions per impression {_SHARE}"),
    "engagement/per_active_user": ("engagement actions per active user", "actions per user (mean)"),
    "invalid/rate": ("share of actions rejected", f"share of actions {_SHARE}"),
    "exposure/impressions": ("impressions (posts shown in feeds)", f"impressions {COUNT}"),
    "exposure/misinfo_share": ("misinformation share of impressions", f"share of impressions {_SHARE}"),
    "exposure/cross_cutting_share": ("cross-cutting share of impressions", f"share of impressions {_SHARE}"),
    "exposure/feed_diversity": ("stance spread within a feed", "std of stances (stance units)"),
    "cascade/scale": ("largest cascade: posts", f"posts {COUNT}"),
    "cascade/depth": ("deepest cascade: repost levels", f"levels {COUNT}"),
    "cascade/max_breadth": ("widest cascade level: posts", f"posts {COUNT}"),
    "cascade/structural_virality": ("structural virality (mean over spread cascades)", "mean distance (hops)"),
    "cascade/spread_count": ("cascades with a share", f"cascades {COUNT}"),
    "cascade/mean_scale": ("posts per spread cascade (mean)", "posts (mean)"),
    "cascade/new_shares": ("new shares", f"shares {COUNT}"),
    "network/follower_gini": ("followers' Gini coefficient", f"Gini {_SHARE}"),
    "network/attention_gini": ("likes received per author: Gini coefficient", f"Gini {_SHARE}"),
    "network/opinion_assortativity": ("opinion assortativity of follow edges", _CORR),
    "network/neighbourhood_correlation": ("opinion vs followees' mean opinion", _CORR),
    "network/new_follows": ("new follows", f"follows {COUNT}"),
    "network/unfollows": ("unfollows", f"unfollows {COUNT}"),
    "network/follow_edges": ("follow edges", f"edges {COUNT}"),
    "opinion/mean": ("mean opinion", "opinion (-1 to 1)"),
    "opinion/std": ("opinion spread (std)", "std (opinion units)"),
    "opinion/bimodality": ("bimodality coefficient (> 0.555: bimodal)", "coefficient (0-1)"),
    "opinion/esteban_ray": ("Esteban-Ray polarization", "polarization (index)"),
    "opinion/to_extreme_share": ("users moved toward an extreme", f"share of users {_SHARE}"),
    "opinion/to_moderation_share": ("users moved toward the centre", f"share of users {_SHARE}"),
    "llm/agents": ("LLM users deciding", f"decisions {COUNT}"),
    "llm/valid": ("valid replies", f"decisions {COUNT}"),
    "llm/invalid": ("invalid replies", f"decisions {COUNT}"),
    "llm/fallback": ("fallbacks to do_nothing", f"decisions {COUNT}"),
    "llm/deadline_noop": ("past the step deadline", f"decisions {COUNT}"),
    "llm/length_stops": ("cut at the token limit", f"decisions {COUNT}"),
    "llm/prompt_tokens": ("prompt tokens", f"tokens {COUNT}"),
    "llm/completion_tokens": ("completion tokens", f"tokens {COUNT}"),
    "llm/backend_cached_prompt_tokens": ("prompt tokens from the prefix cache", f"tokens {COUNT}"),
    "llm/latency_s": ("whole decision (prompts, generation, parsing)", "time (s)"),
    "llm/backend_s": ("generation in the backend", "time (s)"),
    "llm/prompt_build_s": ("building the prompts", "time (s)"),
    "llm/completion_tokens_per_s": ("completion tokens per second", "tokens per second (1/s)"),
    "llm/decisions_per_s": ("decisions per second", "decisions per second (1/s)"),
    "llm/prefix_cache_hit_rate": ("prompt tokens served from the prefix cache", f"share of prompt tokens {_SHARE}"),
}
# tags that share one panel (one line each, a legend), by panel key: same unit, same scale
_PANELS = {
    "llm/latency_s": "llm/seconds",
    "llm/backend_s": "llm/seconds",
    "llm/prompt_build_s": "llm/seconds",
    "llm/agents": "llm/replies",
    "llm/valid": "llm/replies",
    "llm/invalid": "llm/replies",
    "llm/fallback": "llm/replies",
    "llm/deadline_noop": "llm/replies",
    "llm/length_stops": "llm/replies",
}
_PANEL_TITLES = {"llm/seconds": "time per step", "llm/replies": "decisions per step"}
_TRACKED = re.compile(r"cascade/(top\d+|post_\d+)/(\w+)$")
# a tracked cascade's measures (its own, not the largest of all)
_TRACKED_WORDS = {
    "scale": "posts",
    "depth": "repost levels",
    "max_breadth": "posts at the widest level",
    "structural_virality": "structural virality",
}


def group_of(tag: str) -> str:
    """A tag's group: "exposure/impressions" -> "exposure" ("misc" without one)."""
    return tag.split("/", 1)[0] if "/" in tag else "misc"


def _generic(tag: str) -> tuple[str, str]:
    name = tag.rpartition("/")[2]
    if tag.startswith("invalid/"):
        return f"rejected: {name.replace('_', ' ')}", f"actions {COUNT}"
    if tag.startswith("actions/"):
        return name.replace("_", " "), f"actions per step {COUNT}"
    if tag.startswith("herd/") and name.endswith("_mean_score"):
        return f"{name.removesuffix('_mean_score')}: mean score", "likes - dislikes (mean)"
    if tag.startswith("llm/invalid_"):
        return f"invalid replies: {name.removeprefix('invalid_').replace('_', ' ')}", f"decisions {COUNT}"
    if name.endswith("_share"):
        return name.replace("_", " "), f"share {_SHARE}"
    if name.endswith("_s"):
        return name.removesuffix("_s").replace("_", " "), "time (s)"
    return name.replace("_", " "), UNKNOWN_UNIT


def metric_label(tag: str) -> tuple[str, str]:
    """(title, y-label) in words for a metric tag; a tracked cascade's tag
    ("cascade/top2/scale") gets its measure's words and the rank in the title."""
    tracked = _TRACKED.match(tag)
    base = f"cascade/{tracked[2]}" if tracked else tag
    words, unit = _LABELS.get(base) or _generic(base)
    if tracked:
        words = f"{_TRACKED_WORDS.get(tracked[2], words)} of {_rank(tracked[1])}"
    return f"{GROUP_WORDS.get(group_of(tag), group_of(tag).capitalize())}: {words}", unit


def panel_key(tag: str) -> tuple[str, str]:
    """(key, panel title without the group's words) of the panel a tag is drawn in: tags of one key share a panel (one
    line each): the LLM users' times, their decision counts, and each measure of the tracked
    cascades (one line per rank or post); any other tag has a panel of its own."""
    tracked = _TRACKED.match(tag)
    if tracked:
        words = _TRACKED_WORDS.get(tracked[2], tracked[2].replace("_", " "))
        return f"cascade/tracked/{tracked[2]}", words
    key = _PANELS.get(tag)
    return (key, _PANEL_TITLES[key]) if key else (tag, legend_label(tag))


def legend_label(tag: str) -> str:
    """A tag's line label in a shared panel: its words without the group ("valid replies", "rank 2")."""
    tracked = _TRACKED.match(tag)
    if tracked:
        return _rank(tracked[1])
    return metric_label(tag)[0].split(": ", 1)[1]


def _rank(which: str) -> str:
    """ "top2" -> "the 2nd largest cascade"; "post_17" -> "post 17"'s cascade."""
    if which.startswith("post_"):
        return f"post {which[5:]}'s cascade"
    k = int(which[3:])
    return "the largest cascade" if k == 1 else f"the {k}{'nd' if k == 2 else 'rd' if k == 3 else 'th'} largest cascade"
