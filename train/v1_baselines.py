"""The v1 tasks' baselines: tuned on the tuning seeds of the training population, played as
candidates beside PPO, and the one PPO is anchored on (`train/v1.py`, steps 1 and 3).

- recommender: the best constant ranking by the cross-entropy method (per-user W, searched
  from the best global ranking, which is a baseline too), the platform's default ranking,
  and in the tiers with campaigns the campaign detector's tuned change of the constant and
  the privileged one told the campaign (`train/campaign_detector.py`);
- moderator: no moderation, the best constant action, the best report-threshold and
  fact-check-first rules (grid search), the label classifier (`train/label_classifier.py`)
  and the privileged `truth` rule.

Each baseline is `act_for(task) -> act(obs, t)`, as `tuned_baselines.run_episodes` plays it.
"""

from __future__ import annotations

import numpy as np

from oasis_gym.model import moderation
from oasis_gym.model.ranking import CANDIDATE_FEATURES

from . import anchored, campaign_detector, label_classifier
from . import tuned_baselines as tb


def tune(args, say) -> dict:
    """The baselines of `args` (a `v1.Args`), tuned on its tuning seeds of the training population."""
    env, seeds = args.env(), np.asarray(args.tune_seeds)
    cem = {"iterations": args.cem_iterations, "population": args.cem_population, "seed": args.seed, "progress": say}
    if args.task == "recommender":
        if args.ranking == "global":
            out = {"constant": tb.tune_constant(env, seeds, ranking="global", **cem)}
        else:  # the best one ranking for everyone (what per-user weights must beat), then the
            # best per-user weights searched from it
            glob = tb.tune_constant(env, seeds, ranking="global", label="the global constant ranking", **cem)
            start = tb.global_as_per_user(glob["action"], tb.user_rows(env))
            out = {"constant": tb.tune_constant(env, seeds, ranking="per_user", start=start, start_sd=0.25,
                                                label="the per-user constant ranking, from the global one", **cem),
                   "global_constant": glob}  # fmt: skip
        if campaign_detector.has_campaigns(env):  # rankings that change with the campaign regime
            out |= campaign_detector.tune(env, seeds, out["constant"]["action"], args.ranking, cem)
        return out
    return {**tb.tune_rules(env, seeds, say), "constant": tb.tune_constant_codes(env, seeds, **cem),
            "classifier": label_classifier.tune_classifier(env, seeds, say)}  # fmt: skip


def moderator_rules(tuned: dict) -> dict:
    """The tuned moderator policies by their `tuned` key, each as `rule_for(K)`."""
    return {"report_threshold": lambda k: tb.rule_from(tuned["report_threshold"], k),
            "fact_check_first": lambda k: tb.rule_from(tuned["fact_check_first"], k),
            "classifier": lambda k: label_classifier.rule_of(tuned["classifier"], k)}  # fmt: skip


def make_anchor(args, tuned: dict) -> anchored.NoAnchor:
    """What PPO's action is relative to (`--anchor`): the tuned constant ranking (recommender),
    the best of the tuned rules and the label classifier on the tuning seeds (moderator), or
    nothing."""
    if args.anchor == "none":
        return anchored.NoAnchor()
    if args.anchor == "tuned_row":
        return anchored.RowAnchor(tuned["constant"]["action"], len(CANDIDATE_FEATURES))
    if args.anchor == "tuned_detector":
        shift = campaign_detector.detector_shift(tuned)
        return anchored.RowAnchor(tuned["constant"]["action"], len(CANDIDATE_FEATURES), shift=shift,
                                  name="tuned campaign detector, global-row corrections")  # fmt: skip
    if args.task == "recommender":
        return anchored.ConstantAnchor(tuned["constant"]["action"])
    rules = moderator_rules(tuned)
    best = max(rules, key=lambda f: tuned[f]["score"])
    return anchored.RuleAnchor(rules[best], len(moderation.ACTIONS), moderation.QUEUE, name=f"tuned_{best}")


def baselines(args, tuned: dict) -> dict:
    """name -> act_for(task) of every baseline, as tuned."""

    def constant(action):
        return lambda task: lambda obs, t: np.tile(np.asarray(action), (task.k, 1))

    if args.task == "recommender":
        rows = tb.user_rows(args.env())
        out = {"default_ranking": constant(tb.default_action(args.ranking, rows)),
               "tuned_constant": constant(tuned["constant"]["action"])}  # fmt: skip
        if "global_constant" in tuned:  # as a per-user action: its weights in the bias row
            out["tuned_global_constant"] = constant(tb.global_as_per_user(tuned["global_constant"]["action"], rows))
        return out | campaign_detector.candidates(tuned, tuned["constant"]["action"])
    return {
        "no_moderation": constant(np.zeros(moderation.QUEUE, np.int64)),
        "tuned_constant": constant(tuned["constant"]["action"]),
        **{
            f"tuned_{name}": (lambda task, rule_for=rule_for: rule_for(task.k))
            for name, rule_for in moderator_rules(tuned).items()
        },
        "truth (privileged)": tb.truth_rule,
    }
