"""The ABM engine in one import: opinion dynamics, diffusion, behaviour (and the core's texts).

The rule-based user policy (`policies.abm.ABMPolicy`) is built from pure numpy functions
over a batch of users, one module per concept:

* `oasis_gym.model.opinions` (the model's home of opinion change, below both paths):
  Deffuant-Weisbuch, Hegselmann-Krause, relative agreement, social judgment, Lorenz 2021,
  and `update_opinions` dispatching by name;
* `diffusion`: independent cascade and linear threshold;
* `behaviour`: `choose_actions`, one action per user per step;
* `oasis_gym.model.opinion_kernels`: the shared argument checks and the blocked kernels;
* template texts and the lexicon stance live in the core (`oasis_gym.sim.content`), which needs them.
"""

from __future__ import annotations

from oasis_gym.model import opinions
from oasis_gym.model.opinion_kernels import BLOCK_ROWS  # noqa: F401
from oasis_gym.model.opinions import *  # noqa: F403 - the façade re-exports each module's __all__
from oasis_gym.sim.content import _TEMPLATES, STANCE_LABELS, lexicon_stance, stance_label, template_text  # noqa: F401

from . import behaviour, diffusion
from .behaviour import *  # noqa: F403
from .behaviour import CHOICE_BLOCK_ROWS  # noqa: F401
from .diffusion import *  # noqa: F403

__all__ = [
    *opinions.__all__,
    *diffusion.__all__,
    *behaviour.__all__,
    "template_text",
    "lexicon_stance",
    "STANCE_LABELS",
    "stance_label",
]
