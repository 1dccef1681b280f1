"""The ABM engine in one import: opinion dynamics, diffusion, behaviour (and the core's texts).

The rule-based user policy (`policies.abm.ABMPolicy`) is built from pure numpy functions
over a batch of users, one module per concept:

* `opinion_dynamics`: Deffuant-Weisbuch, Hegselmann-Krause, relative agreement, social
  judgment, Lorenz 2021, and `update_opinions` dispatching by name;
* `diffusion`: independent cascade and linear threshold;
* `behaviour`: `choose_actions`, one action per user per step;
* `blocks`: the shared argument checks and the blocked kernels;
* template texts and the lexicon stance live in the core (`oasis_gym.sim.content`), which needs them.
"""

from __future__ import annotations

from oasis_gym.sim.content import _TEMPLATES, STANCE_LABELS, lexicon_stance, stance_label, template_text  # noqa: F401

from . import behaviour, diffusion, opinion_dynamics
from .behaviour import *  # noqa: F403 - the façade re-exports each module's __all__
from .behaviour import CHOICE_BLOCK_ROWS  # noqa: F401
from .blocks import BLOCK_ROWS  # noqa: F401
from .diffusion import *  # noqa: F403
from .opinion_dynamics import *  # noqa: F403

__all__ = [
    *opinion_dynamics.__all__,
    *diffusion.__all__,
    *behaviour.__all__,
    "template_text",
    "lexicon_stance",
    "STANCE_LABELS",
    "stance_label",
]
