"""`oasis-gym train TARGET`: the training scripts as a CLI subcommand.

`recommender` and `moderator` train the v1 tasks (Recommender-v3 by default, v1, v2 and v4 by
`--version`; Moderator-v1, v2 by `--version`; `train/v1.py`: PPO on the native vector env
against baselines tuned as hard); `recommender-v0` and `moderator-v0` train the v0 envs
(`train/recommender.py`, `train/moderator.py`).

Wire-up (`oasis_gym/cli/parser.py` builds the parser, `oasis_gym/cli/__init__.py` dispatches):

    from oasis_gym.train.cli import add_train_parser, cmd_train
    add_train_parser(sub)            # in build_parser, with sub = parser.add_subparsers(...)
    {"train": cmd_train, ...}        # in main's dispatch on args.command
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from oasis_gym.agents import ModeratorAgent, RecommenderAgent
from oasis_gym.app.console import Summary

from . import args as cli_args
from . import moderator, recommender, v1
from .outputs import staged_training, train_output


def add_train_parser(subparsers) -> argparse.ArgumentParser:
    """Add `train` with the `recommender` and `moderator` targets; each target's options are
    generated from its script's `Args` (the same options and defaults as the script)."""
    train = subparsers.add_parser(
        "train",
        help="train a platform agent with PPO (stable-baselines3)",
        description="Train the recommender or the moderator with PPO and compare it, on held-out seeds "
        "and a held-out population, with baselines tuned as hard; writes model.zip, TensorBoard logs, "
        "learning_curve.png and eval.json under --out.",
    )
    targets = train.add_subparsers(dest="target", required=True)
    for name, text in (
        (
            "recommender",
            "learn the feed ranking of Recommender-v3 (--version 1 or 2: the earlier tasks, without its headroom; "
            "4: v3 under OASIS's rules)",
        ),
        (
            "moderator",
            "learn to moderate in Moderator-v1 (adaptive adversaries, fact-check budget; --version 2: "
            "under OASIS's rules)",
        ),
    ):
        v1.add_options(targets.add_parser(name, help=text, description=text))
    for name, text, module in (
        ("recommender-v0", "learn the feed ranking weights of Recommender-v0", recommender),
        ("moderator-v0", "learn to moderate fast-spreading posts (Moderator-v0)", moderator),
    ):
        target = targets.add_parser(name, help=text, description=text)
        cli_args.add_arguments(target, module.Args)
        target.add_argument(
            "--overwrite", action="store_true", help="replace an earlier training run's output in --out (nothing else)"
        )
        target.add_argument("--json", action="store_true", help="end with one JSON line instead of the summary")
        target.add_argument("--quiet", action="store_true", help="no progress bar or rollout tables")
    return train


def cmd_train(args: argparse.Namespace) -> int:
    """Run the chosen training script; print a one-line JSON summary."""
    try:
        import stable_baselines3  # noqa: F401
    except ImportError as err:
        raise SystemExit(f"training needs stable-baselines3: pip install -e '.[train]' ({err})") from err
    if not args.target.endswith("-v0"):
        return v1.run_cli(args.target, args, f"oasis-gym train {args.target}")
    agent_cls = RecommenderAgent if args.target == "recommender-v0" else ModeratorAgent
    numeric = sorted(f.name for f in dataclasses.fields(agent_cls) if isinstance(f.default, (int, float)))
    bad = sorted({k for k, _ in args.agent_param} - set(numeric))
    if bad:
        print(f"oasis-gym train {args.target}: error: unknown --agent-param {bad}; valid: {numeric}", file=sys.stderr)
        return 2

    module = recommender if args.target == "recommender-v0" else moderator
    run_args = dataclasses.replace(cli_args.parse_into(module.Args, args), quiet=args.quiet or args.json)
    # a taken --out (a user's model.zip, an earlier run's without --overwrite): one line, exit code 2, before training
    output = train_output(run_args.out, getattr(args, "overwrite", False)).check()
    used = cli_args.rollout_timesteps(run_args)
    if used != run_args.timesteps:  # PPO learns in whole rollouts: say what runs
        print(
            f"oasis-gym train {args.target}: --timesteps {run_args.timesteps} is rounded up to {used}"
            f" (whole rollouts of --n-steps {run_args.n_steps} x --n-envs {run_args.n_envs})",
            file=sys.stderr,
        )
    with staged_training(output, v1.progress_printer(run_args.quiet)):
        result = module.train(run_args)
    if not args.json:
        print("\n\n".join(result["tables"]))  # baselines vs PPO on the held-out sets, both agents
    if args.target == "recommender-v0":
        summary = {"ppo_return": result["ppo"]["mean"], "baselines": result["baseline_means"]}
    else:
        summary = {
            "exposure_cut": result["ppo"]["exposure_cut"]["mean"],
            "true_actioned_share": result["ppo"]["true_actioned_share"]["mean"],
        }
    out = run_args.ppo.out_dir
    Summary(
        f"\nTrained {args.target} for {result['train']['timesteps']:,} timesteps (rule-based users).",
        outputs=[(f"{out}/eval.json", "PPO and the baselines on the held-out sets"),
                 (result["learning_curve_png"], "PPO's return while it trained"),
                 (f"{out}/model.zip", "the trained policy (SB3)")],
        next=[(f"tensorboard --logdir {out}/tb", "the training curves"),
              (f"oasis-gym train {args.target[:-3]}", "the v1 task, which needs learning")],
        data={**summary, "timesteps": result["train"]["timesteps"], "out": out, "eval_json": f"{out}/eval.json",
              "learning_curve_png": result["learning_curve_png"]},
    ).show(as_json=args.json)  # fmt: skip
    return 0
