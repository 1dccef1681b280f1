"""Scenarios: the OASIS paper's experiments as runnable TOML configs that report their figures.

A scenario file (``oasis_gym/scenarios/configs/<name>.toml``) names a population, the env
arguments, the user policy and the experiment's own settings; its ``[scenario] kind`` picks the
experiment module here that seeds the initial content (the env's ``setup(sim)`` hook, run at every reset
after the users are added), records the experiment's metrics every step and computes its
figures at the end:

* ``information_spread`` (twitter_information_spread): one real Twitter15 cascade re-run on
  its 111 real users; per-minute scale / depth / max breadth of the root's repost tree and
  their NRMSE against the real propagation.
* ``group_polarization``: two groups of opposite leaning discuss a choice dilemma; opinion
  mean / std / bimodality / Esteban-Ray / share moved to the extremes, overall and per group.
* ``herd_effect`` (reddit_herd_effect): Muchnik-style first-vote treatment of comments; mean
  score of the up-treated, control and down-treated groups over time.
* ``misinformation`` (misinformation_1m): four true news posts and four matched rumours among
  a million synthetic users; related posts, impressions and reach of each class over time.

Usage::

    sc = load_scenario("reddit_herd_effect", {"users": 3600})
    figures = sc.run(db_path="herd.db", logdir="runs/herd")

    oasis-gym run --scenario reddit_herd_effect --set users=3600

Every run stores the scenario config in the journal's meta (``state.scenario``, every step)
and the final figures (``scenario_figures``); the per-step scenario metrics go to the
``metrics(step, tag, value)`` table (so ``oasis-gym report`` plots them) and to TensorBoard
(run ``<logdir>/scenario``, with the config as text and hparams), next to the generic metrics
of ``MetricsRecorder`` (run ``<logdir>/episode_0``).

Overrides (``--set key=value``): a dotted key addresses the TOML tables
(``policy.abm.cascade_p=0.5``); a bare key is looked up in [scenario], [population], [env]
and [policy] and must be found in exactly one of them (``users=3600``, ``steps=10``). Values
are parsed as TOML (``3600``, ``0.5``, ``true``, ``"text"``, ``[1, 2]``), else taken as text.

A scenario (Melting Pot's sense) = a substrate (the Twitter or Reddit env) + a background
population + an experiment. The package:

* ``config``: where scenario files live, ``--set`` overrides;  ``scenario``: :class:`Scenario`
  (make_env, make_policy, run, records) and ``load_scenario``;  ``cli``: ``oasis-gym run --scenario``;
* one module per experiment kind: ``spread``, ``polarization``, ``herd``, ``misinformation``
  (base class in ``kind``), with shared ``populations``, ``cascades`` and ``policies`` (the
  [policy] table; the wrappers live in ``oasis_gym.policies.wrappers``, the sampled feed in
  ``oasis_gym.recsys.sampled``);
* analysis over runs: ``stats`` (mean, 95% CI over seeds), ``effects`` (each kind's effect),
  ``evidence`` (who is LLM / ABM, what was fitted on what), ``sweep`` (``oasis-gym sweep``),
  ``spread_calibration`` (held-out fit), ``graphs`` (a generated follow graph with depth).

The TOML files ship as package data of ``oasis_gym.scenarios`` (``scenarios/configs/``), beside the code.
"""

from __future__ import annotations

from ..policies.wrappers import CommentVoter, DecayingCascadeABM
from ..recsys.sampled import SampledFeed
from .cascades import cascade_tops, nrmse, root_cascade_curves
from .cli import add_scenario_args, run_scenario_cli
from .config import apply_overrides, list_scenarios, parse_sets, parse_value, scenario_dir, scenario_path
from .kind import ScenarioKind
from .polarization import interview_opinion
from .populations import accounts, concat_populations
from .scenario import KINDS, Scenario, load_scenario

__all__ = [
    "Scenario",
    "load_scenario",
    "list_scenarios",
    "scenario_path",
    "parse_sets",
    "apply_overrides",
    "add_scenario_args",
    "run_scenario_cli",
    "nrmse",
    "cascade_tops",
    "root_cascade_curves",
    "DecayingCascadeABM",
    "CommentVoter",
    "SampledFeed",
    "KINDS",
    "ScenarioKind",
    "scenario_dir",
    "parse_value",
    "interview_opinion",
    "accounts",
    "concat_populations",
]
