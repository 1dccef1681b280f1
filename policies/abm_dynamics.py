"""The ABM engine in one import: opinion dynamics, diffusion, behaviour (and the core's texts).

The rule-based user policy (`policies.abm.ABMPolicy`) is built from pure numpy functions
over a batch of users, one module per concept:

* `opinion_dynamics`: Deffuant-Weisbuch, Hegselmann-Krause, relative agreement, social
  judgment, Lorenz 2021, and `update_opinions` dispatching by name;
* `diffusion`: independent cascade and linear threshold;
* `behaviour`: `choose_actions`, one action per user per step;
* `blocks`: the shared argument checks and the blocked kernels;
* template texts and the lexicon stance live in the core (`oasis_gym.content`), which needs them.
"""

from __future__ import annotations

from oasis_gym.content import _TEMPLATES, STANCE_LABELS, lexicon_stance, stance_label, template_text  # noqa: F401

from .behaviour import CHOICE_BLOCK_ROWS, ENGAGE_ACTIONS, BehaviourParams, choose_actions  # noqa: F401
from .blocks import BLOCK_ROWS  # noqa: F401
from .diffusion import independent_cascade, linear_threshold, sample_thresholds
from .opinion_dynamics import (
    MODEL_ALIASES,
    MODEL_PARAMS,
    DWParams,
    HKParams,
    LorenzParams,
    RAParams,
    SJParams,
    deffuant_weisbuch,
    hegselmann_krause,
    lorenz2021,
    relative_agreement,
    social_judgment,
    update_opinions,
)

__all__ = [
    "DWParams",
    "HKParams",
    "RAParams",
    "SJParams",
    "LorenzParams",
    "MODEL_PARAMS",
    "MODEL_ALIASES",
    "deffuant_weisbuch",
    "hegselmann_krause",
    "relative_agreement",
    "social_judgment",
    "lorenz2021",
    "update_opinions",
    "independent_cascade",
    "linear_threshold",
    "sample_thresholds",
    "BehaviourParams",
    "choose_actions",
    "ENGAGE_ACTIONS",
    "template_text",
    "lexicon_stance",
    "STANCE_LABELS",
    "stance_label",
]
