"""The evidence statement every scenario report carries (summary, README, TensorBoard text).

It comes from the scenario's ``[evidence]`` table and its ``[policy]``:

    [evidence]
    mechanism = "how users decide, in one sentence"
    data = "what real data the run uses"
    fitted = { cascade_p = "scale curve minutes 0-60, seeds 100-103" }   # parameter -> fitted on what
    published = { moral_emotional_irr = "Brady et al. 2017 ..." }         # parameter -> source
    hand_set = ["rho", "alpha"]                                           # set by hand
    level = "hand-set mechanism: exploratory"

plus which users are LLM and which ABM, derived from ``policy.kind`` (so a ``--set
policy.kind=hybrid`` run says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["evidence", "evidence_text"]


def _users(config: Mapping[str, Any]) -> str:
    pol = config.get("policy", {})
    kind = pol.get("kind", "abm")
    llm = pol.get("llm", {})
    model = f"{llm.get('backend', 'auto')} backend, model {llm.get('model') or 'the backend default'}"
    if kind == "llm":
        return f"all users are LLM users ({model})"
    if kind == "hybrid":
        pick = "flagged core users" if pol.get("core") == "is_core" else "most-followed users"
        return (
            f"hybrid: up to {pol.get('core_users', 10)} {pick} are LLM users ({model}); "
            "all others are rule-based ABM users"
        )
    return "all users are rule-based ABM users (no LLM)"


def evidence(config: Mapping[str, Any]) -> dict[str, Any]:
    """{mechanism, users, data, fitted, published, hand_set, level} of a scenario config."""
    ev = dict(config.get("evidence", {}))
    kind = config.get("policy", {}).get("kind", "abm")
    level = str(ev.get("level", "not stated"))
    if kind in ("hybrid", "llm"):
        level = f"{level}; LLM users decide for themselves (their model's behaviour is the mechanism under test)"
    return {
        "mechanism": str(ev.get("mechanism", "not stated")),
        "users": _users(config),
        "data": str(ev.get("data", "not stated")),
        "fitted": dict(ev.get("fitted", {})),
        "published": dict(ev.get("published", {})),
        "hand_set": list(ev.get("hand_set", [])),
        "level": level,
    }


def evidence_text(ev: Mapping[str, Any]) -> str:
    """Markdown lines of an evidence dict (TensorBoard text, reports)."""
    lines = [
        f"**Evidence level:** {ev['level']}",
        f"**Users:** {ev['users']}",
        f"**Mechanism:** {ev['mechanism']}",
        f"**Data:** {ev['data']}",
    ]
    for title, key in (("Fitted", "fitted"), ("From published estimates", "published")):
        if ev.get(key):
            lines.append(f"**{title}:** " + "; ".join(f"`{k}`: {v}" for k, v in ev[key].items()))
    if ev.get("hand_set"):
        lines.append("**Set by hand:** " + ", ".join(f"`{k}`" for k in ev["hand_set"]))
    return "\n\n".join(lines)
