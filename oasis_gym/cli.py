"""`oasis-gym` command line: run a simulation, make a report.

    oasis-gym run --platform twitter --users 1000 --steps 20 --policy abm --db run.db
    oasis-gym report run.db --out report/
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

POLICIES = ("hybrid", "abm", "random", "llm")


def _users(value: str):
    return int(value) if value.isdigit() else value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oasis-gym", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a simulation")
    run.add_argument("--platform", choices=("twitter", "reddit"), default="twitter")
    run.add_argument("--users", type=_users, default=1000, help="user count (synthetic) or a profile file (.csv/.json)")
    run.add_argument("--steps", type=int, default=None, help="total steps (default 20; on --resume: the original run's)")
    run.add_argument("--policy", choices=POLICIES, default="hybrid",
                     help="hybrid: LLM core users + ABM ordinary users (default); abm; random; llm (all users)")
    run.add_argument("--core-users", type=int, default=10, help="hybrid: the most-followed users driven by the LLM")
    run.add_argument("--llm-backend", default="auto", help="auto | vllm | transformers | openai")
    run.add_argument("--llm-model", default=None, help="model path/name for the LLM backend")
    run.add_argument("--llm-endpoint", action="append", default=None, help="OpenAI-compatible base URL (repeatable)")
    run.add_argument("--recsys", default=None, help="twitter | reddit | random | chronological (default: the platform's)")
    run.add_argument("--activation", default="activity", help="'activity' (24-h vectors) or a flat probability")
    run.add_argument("--all-actions", action="store_true", help="enable all 23 actions instead of the platform defaults")
    run.add_argument("--seed-posts", type=int, default=100,
                     help="posts the most-followed users have written before step 0 (synthetic populations)")
    run.add_argument("--db", default="run.db", help="SQLite journal path")
    run.add_argument("--logdir", default=None, help="TensorBoard log dir (default runs/<db stem>)")
    run.add_argument("--no-tensorboard", action="store_true")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--resume", default=None, metavar="DB",
                     help="continue the run journaled in DB (same policy and settings) up to --steps total steps")
    from oasis_gym.scenarios import add_scenario_args

    add_scenario_args(run)
    from oasis_gym.train.cli import add_train_parser

    add_train_parser(sub)
    report = sub.add_parser("report", help="PNG plots and a text summary of a finished run")
    report.add_argument("db")
    report.add_argument("--out", default=None, help="output folder (default <db stem>_report)")
    return parser


def make_policy(args, env):
    from oasis_gym.policies.abm import ABMPolicy
    from oasis_gym.policies.base import RandomPolicy
    from oasis_gym.policies.hybrid import HybridPolicy

    if args.policy == "abm":
        return ABMPolicy()
    if args.policy == "random":
        return RandomPolicy()
    llm = make_llm_policy(args)
    if args.policy == "llm":
        return llm
    if getattr(args, "core_ids", None) is not None:  # a resumed run keeps its LLM users
        return HybridPolicy([(llm, np.asarray(args.core_ids, dtype=np.int64))], default=ABMPolicy())
    policy = HybridPolicy.top_k_by_followers(env, llm, ABMPolicy(), args.core_users)
    args.core_ids = policy.routes[0][1].tolist()
    return policy


def make_llm_policy(args):
    try:
        from oasis_gym.policies.llm_policy import LLMPolicy, backend_label, make_backend
    except ImportError as err:  # the llm extra is missing
        raise SystemExit(f"LLM users need the 'llm' extra: pip install 'oasis-gym[llm]' ({err}). "
                         "Or run without an LLM: --policy abm") from err
    try:
        backend = make_backend(args.llm_backend, model=args.llm_model, endpoints=args.llm_endpoint)
    except (ImportError, RuntimeError, FileNotFoundError) as err:
        raise SystemExit(f"no LLM backend available: {err}\nRun without an LLM: --policy abm") from err
    print(f"LLM users: {backend_label(backend)}", file=sys.stderr, flush=True)
    return LLMPolicy(backend)


def cmd_run(args) -> int:
    if getattr(args, "scenario", None):
        from oasis_gym.scenarios import run_scenario_cli

        return run_scenario_cli(args)
    from oasis_gym.envs import reddit_v0, twitter_v0
    from oasis_gym.envs.social_env import SocialMediaEnv
    from oasis_gym.run import simulate

    if args.resume:
        from oasis_gym.platform.journal import read_meta

        saved = read_meta(args.resume).get("state", {}).get("cli")
        if saved is None:
            raise SystemExit(f"{args.resume} was not written by 'oasis-gym run'; resume it from Python (oasis_gym.run.resume)")
        args = argparse.Namespace(**{**saved, "resume": args.resume, "quiet": args.quiet,
                                     "steps": args.steps or saved["steps"], "db": args.resume})
        env = SocialMediaEnv.resume(args.db, max_cycles=args.steps)
    else:
        args.steps = args.steps or 20
        module = twitter_v0 if args.platform == "twitter" else reddit_v0
        kwargs = {"users": args.users, "max_cycles": args.steps, "db_path": args.db,
                  "activation": args.activation if args.activation == "activity" else float(args.activation)}
        if args.recsys:
            kwargs["recsys"] = args.recsys
        if args.all_actions:
            kwargs["available_actions"] = tuple(range(23))
        if isinstance(args.users, int) and args.seed_posts > 0:
            kwargs["setup"] = seed_posts_setup(args.seed_posts)
        env = module.parallel_env(**kwargs)
        env.reset(seed=args.seed)
    policy = make_policy(args, env)
    policy.reset(env, np.arange(env.sim.platform.n_users), args.seed)
    if args.resume and "policy" in env.sim.saved_state:
        policy.load_state_dict(env.sim.saved_state["policy"])
    saved_args = {k: v for k, v in vars(args).items() if k != "resume"}
    env.sim.state_providers["cli"] = lambda: saved_args
    recorder = None
    if not args.no_tensorboard:
        from oasis_gym.metrics import MetricsRecorder

        logdir = args.logdir or str(Path("runs") / Path(args.db).stem)
        recorder = MetricsRecorder(logdir)
        recorder.attach(env.sim)
        recorder.on_reset(env.sim)
    summary = simulate(env, policy, args.steps - env._cycles, seed=args.seed, reset=False, progress=not args.quiet)
    if recorder is not None:
        recorder.close()
    env.close()
    print(json.dumps({"steps": summary.steps, "actions": summary.actions, "accepted": summary.accepted,
                      "actions_per_s": round(summary.actions_per_s, 1), "db": args.db,
                      "logdir": recorder.logdir if recorder is not None else None}))
    return 0


def seed_posts_setup(count: int):
    """A setup hook: the `count` most-followed users (one post each, wrapping around) wrote
    posts before step 0 whose wording and stance follow their opinion, so a synthetic
    population starts with something to read."""
    def setup(sim) -> None:
        from oasis_gym.policies.abm_dynamics import template_text

        pf = sim.platform
        authors = np.argsort(-pf.u_followers.a, kind="stable")[: max(1, min(count, pf.n_users))]
        authors = np.resize(authors, count)
        stance = pf.u_opinion.a[authors]
        rng = np.random.default_rng(sim.seed)
        texts = template_text(stance, "the news", rng)
        pf.create_posts(authors, texts, stance=stance)

    return setup


def cmd_report(args) -> int:
    from oasis_gym.metrics.report import make_report

    out = args.out or f"{Path(args.db).with_suffix('')}_report"
    paths = make_report(args.db, out)
    for p in paths:
        print(p)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train":
        from oasis_gym.train.cli import cmd_train

        return cmd_train(args)
    return {"run": cmd_run, "report": cmd_report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
