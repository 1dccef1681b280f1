"""`oasis-gym train recommender|moderator`: the training scripts as a CLI subcommand.

Wire-up (`oasis_gym/cli/parser.py` builds the parser, `oasis_gym/cli/__init__.py` dispatches):

    from oasis_gym.train.cli import add_train_parser, cmd_train
    add_train_parser(sub)            # in build_parser, with sub = parser.add_subparsers(...)
    {"train": cmd_train, ...}        # in main's dispatch on args.command
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields

from oasis_gym.agents import ModeratorAgent, RecommenderAgent

from . import args as cli_args
from . import moderator, recommender
from .outputs import train_output


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Add `train` with the `recommender` and `moderator` targets; each target's options are
    generated from its script's `Args` (the same options and defaults as the script)."""
    train = subparsers.add_parser(
        "train",
        help="train a platform agent with PPO (stable-baselines3)",
        description="Train recommender_0 or moderator_0 on the misinfo_stream scenario and "
        "compare it with fixed baselines; writes model.zip, checkpoints, "
        "TensorBoard logs and eval.json under --out.",
    )
    targets = train.add_subparsers(dest="target", required=True)
    for name, text, module in (
        ("recommender", "learn the feed ranking weights (Recommender-v0)", recommender),
        ("moderator", "learn to moderate fast-spreading posts (Moderator-v0)", moderator),
    ):
        target = targets.add_parser(name, help=text)
        cli_args.add_arguments(target, module.Args)
        target.add_argument(
            "--overwrite", action="store_true", help="replace an earlier training run's output in --out (nothing else)"
        )
    return train


def cmd_train(args: argparse.Namespace) -> int:
    """Run the chosen training script; print a one-line JSON summary."""
    try:
        import stable_baselines3  # noqa: F401
    except ImportError as err:
        raise SystemExit(f"training needs stable-baselines3: pip install stable-baselines3 ({err})") from err
    agent_cls = RecommenderAgent if args.target == "recommender" else ModeratorAgent
    numeric = sorted(f.name for f in fields(agent_cls) if isinstance(f.default, (int, float)))
    bad = sorted({k for k, _ in args.agent_param} - set(numeric))
    if bad:
        print(f"oasis-gym train {args.target}: error: unknown --agent-param {bad}; valid: {numeric}", file=sys.stderr)
        return 2

    module = recommender if args.target == "recommender" else moderator
    run_args = cli_args.parse_into(module.Args, args)
    # a taken --out (a user's model.zip, an earlier run's without --overwrite): one line, exit code 2, before training
    train_output(run_args.out, getattr(args, "overwrite", False)).check()
    used = cli_args.rollout_timesteps(run_args)
    if used != run_args.timesteps:  # PPO learns in whole rollouts: say what runs
        print(
            f"oasis-gym train {args.target}: --timesteps {run_args.timesteps} is rounded up to {used}"
            f" (whole rollouts of --n-steps {run_args.n_steps} x --n-envs {run_args.n_envs})",
            file=sys.stderr,
        )
    result = module.train(run_args)
    print("\n\n".join(result["tables"]))  # baselines vs PPO on the held-out sets, both agents
    if args.target == "recommender":
        summary = {"ppo_return": result["ppo"]["mean"], "baselines": result["baseline_means"]}
    else:
        summary = {
            "exposure_cut": result["ppo"]["exposure_cut"]["mean"],
            "true_actioned_share": result["ppo"]["true_actioned_share"]["mean"],
        }
    print(
        json.dumps(
            {
                **summary,
                "timesteps": result["train"]["timesteps"],
                "out": run_args.ppo.out_dir,
                "eval_json": f"{run_args.ppo.out_dir}/eval.json",
                "learning_curve_png": result["learning_curve_png"],
            }
        )
    )
    return 0
