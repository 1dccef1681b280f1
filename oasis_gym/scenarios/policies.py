"""The user policy of a scenario's [policy] table: ABM, LLM (lazy import) and the LLM routes of a hybrid."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..actions import ACTION_BY_NAME
from ..policies.abm import ABMConfig
from ..policies.abm_dynamics import MODEL_ALIASES, MODEL_PARAMS, BehaviourParams
from ..policies.content_share import ContentAwareABM, ContentParams
from ..policies.factory import llm_backend, llm_policy
from ..policies.hybrid import HybridPolicy
from ..policies.wrappers import DecayingCascadeABM


def _build_abm(spec: Mapping[str, Any]):
    """ABMPolicy from the [policy.abm] table ("none" means None; nested tables give the
    opinion model's params and BehaviourParams)."""
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
    if diffusion == "content_aware":  # users share by what posts say (policies/content_share.py)
        return ContentAwareABM(cfg, content=ContentParams(**(content or {})))
    return DecayingCascadeABM(cfg, half_life=half_life)


def _build_llm(spec: Mapping[str, Any]):
    """The LLM user policy of the [policy.llm] table (`policies.factory`: lazy import, a
    missing extra or backend is a ConfigError)."""
    backend = llm_backend(
        spec.get("backend", "auto"),
        model=spec.get("model") or None,
        endpoints=list(spec.get("endpoints") or []) or None,
        without_llm="--set policy.kind=abm",
        **dict(spec.get("backend_options", {})),  # e.g. device, dtype
    )
    return llm_policy(backend, **dict(spec.get("options", {})))


def _llm_routes(policy, n_users: int) -> list[tuple[Any, np.ndarray]]:
    """(LLM policy, its user ids) pairs inside a policy (hybrid routes or a whole LLM policy)."""

    def is_llm(p) -> bool:
        return callable(getattr(p, "interview", None)) or callable(getattr(getattr(p, "core", None), "interview", None))

    if isinstance(policy, HybridPolicy):
        out = [(p, ids) for p, ids in policy.routes if is_llm(p)]
        if policy.default is not None and is_llm(policy.default):
            routed = np.concatenate([ids for _, ids in policy.routes]) if policy.routes else np.empty(0, np.int64)
            out.append((policy.default, np.setdiff1d(np.arange(n_users), routed)))
        return out
    return [(policy, np.arange(n_users))] if is_llm(policy) else []
