"""Train PPO on a platform-agent task (Recommender-v1 to -v4 with `--version N`, Moderator-v1 and -v2)
through its native vector env, then compare it with baselines tuned as hard, on held-out
seeds and a held-out population.

    python -m oasis_gym.train.v1 recommender --difficulty medium --timesteps 1000000 --out runs/rec-v1
    oasis-gym train recommender --difficulty hard --out runs/rec-v1
    oasis-gym train recommender --version 3 --difficulty hard --out runs/rec-v3

Steps (read top to bottom):
1. baselines (`train/v1_baselines.py`), tuned on their own seeds of the training
   population (never the evaluation seeds): the best constant action by the cross-entropy
   method (the recommender's best global ranking too), the moderator's best
   report-threshold and fact-check-first rules by grid search, and its supervised
   baseline: a logistic-regression label classifier fit on the tuning seeds' labels with
   its threshold tuned (`train/label_classifier.py`); in the
   recommender tiers with campaigns, the tuned constant plus a tuned change of its global
   row where a campaign detector fires, and the privileged same while a campaign runs
   (`train/campaign_detector.py`); their compute (env steps) is recorded beside PPO's
   timesteps.
2. PPO (stable-baselines3, the one driver `train/ppo.py`) on `n_envs` episodes stepped together
   in one process (`LockstepSB3VecEnv` over the native vector env) under VecMonitor + VecNormalize, by
   default anchored at the tuned baseline (`--anchor`, `train/anchored.py`; the moderator
   with the slot-shared policy, `train/slot_policy.py`): SB3's progress bar and rollout
   tables, TensorBoard under `tb/`, a wall-clock limit if asked.
3. evaluation of the final policy (deterministic) and every baseline on two held-out sets,
   one episode per seed: the training population and a population never trained on.
   Per set: mean ± std of return, engagement, misinformation impressions; PPO minus each
   baseline per seed with its 95 % t interval and PPO's wins. Users are rule-based (no LLM).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import time
from dataclasses import dataclass

import numpy as np

from oasis_gym import load_entry_point, vector_envs
from oasis_gym.app.console import Summary, duration, plural
from oasis_gym.checks import MAX_ID, MAX_SEED, OneLineParser
from oasis_gym.envs.vector_shards import ShardedVectorEnv, auto_workers
from oasis_gym.metrics.intervals import mean_ci
from oasis_gym.model import moderation
from oasis_gym.model.observations import MODERATOR_GLOBALS
from oasis_gym.model.population import FOLLOWEES, MAX_TASK_USERS
from oasis_gym.model.tiers import DIFFICULTIES

from . import anchored, campaign_detector
from . import args as cli_args
from . import tuned_baselines as tb
from .anchored import FIRST_LOGIT
from .args import EVAL_SEEDS, MAX_EPISODE_STEPS, MAX_ROLLOUT_STEPS, MAX_SECONDS, RATE, SHARE, opt
from .common import limit_threads, write_results
from .outputs import staged_training, train_output
from .ppo import SLOT, PolicySpec, PPOConfig, train_ppo
from .report import task_table
from .v1_baselines import baselines, make_anchor, tune

TASKS = ("recommender", "moderator")
# each task's vector env per version
VERSIONS = {task: vector_envs(task) for task in TASKS}
MAX_VEC_ENVS = 1024  # episodes of one native vector env
# what `--version` defaults to: the version README's benchmarks recommend (Recommender-v3: the
# state headroom v1 and v2 lack; docs/training.md)
DEFAULT_VERSION = {"recommender": 3, "moderator": 1}


@dataclass
class Args:
    """Settings of one v1 training run (each field is a command-line option)."""

    task: str = opt("recommender", cli=False)
    version: int | None = opt(None, "task version: the recommender has 1-4 (envs/recommender_vN.py; default 3, "
                              "the task README's benchmarks recommend: v1 and v2 leave PPO no headroom; 4: v3 "
                              "under OASIS's rules), the moderator 1-2 (default 1; 2: under OASIS's rules)",
                              type=int, choices=sorted({v for vs in VERSIONS.values() for v in vs}))  # fmt: skip
    difficulty: str = opt("medium", "task tier", choices=list(DIFFICULTIES))
    users: int = opt(1000, "users per simulated platform", bounds=(2 * FOLLOWEES, MAX_TASK_USERS))
    max_steps: int = opt(100, "steps per episode", bounds=(1, MAX_EPISODE_STEPS))
    ranking: str = opt(
        "per_user", "recommender only: per-user weights W or one global w", choices=["per_user", "global"]
    )
    timesteps: int = opt(
        1_000_000,
        "PPO timesteps (env steps summed over the envs); PPO learns in whole rollouts "
        "of --n-steps x --n-envs, so a number that is no multiple is rounded up to one (said, and "
        "saved in eval.json)",
        bounds=(1, MAX_ID),
    )
    n_envs: int = opt(32, "episodes stepped together", bounds=(1, MAX_VEC_ENVS))
    env_workers: int = opt(
        0,
        "processes the episodes are stepped in, a share of them each (0: one per core, each with at least "
        "16 episodes; 1: this process alone); results do not depend on it (envs/vector_shards.py)",
        bounds=(0, MAX_VEC_ENVS),
    )
    seed: int = opt(
        0,
        "PPO seed; training episodes start at seeds seed .. seed + n_envs - 1, then >= 2**20",
        bounds=(0, MAX_SEED),
    )
    population_seed: int = opt(0, "the training population", bounds=(0, MAX_SEED))
    eval_population: int = opt(1, "the held-out population (never trained or tuned on)", bounds=(0, MAX_SEED))
    eval_seeds: tuple[int, ...] = opt(tuple(range(9000, 9020)), "held-out evaluation seeds", bounds=EVAL_SEEDS)
    tune_seeds: tuple[int, ...] = opt(tuple(range(5000, 5016)), "seeds the baselines are tuned on", bounds=EVAL_SEEDS)
    # the tuning's compute: 50 times the default iterations, 32 times its candidates at most
    cem_iterations: int = opt(20, "cross-entropy iterations of the constant-action search", bounds=(1, 1000))
    cem_population: int = opt(
        32, "candidates per cross-entropy iteration (each on every tuning seed)", bounds=(1, 1024)
    )
    anchor: str = opt(
        "tuned",
        "PPO starts at the tuned baseline and learns corrections of its action (tuned), of the "
        "recommender's global row only (tuned_row: one change for every user, what a change of "
        "the platform's state asks for), of that row on top of the tuned campaign detector's change "
        "(tuned_detector: tiers with campaigns) or learns the whole action (none); train/anchored.py",
        choices=["tuned", "tuned_row", "tuned_detector", "none"],
    )
    rule_logit: float = opt(
        FIRST_LOGIT,
        "moderator: how much PPO's slot policy prefers code 0 at the start (the tuned rule's code; 'none' "
        "with --anchor none): a logit bonus, lower explores more",
        bounds=(0.0, 30.0),  # e**30: code 0 certain to float32's precision; more only overflows
    )
    action_std: float = opt(
        0.0,
        "recommender: initial std of PPO's Gaussian actions (0: 0.135 anchored, 0.37 with --anchor none)",
        bounds=(0.0, 10.0),  # ten times the width of the action box's unit: noise, not exploration, past it
    )
    policy_layers: tuple[int, ...] = opt(
        (64, 64), "recommender: hidden layer sizes of PPO's actor (the critic's: 64 64)", bounds=(1, 1024)
    )
    paired: int = opt(
        1,
        "common random numbers: groups of this many envs play the same episode seeds, and PPO's "
        "advantages are centered within each group at each step, so the noise a group shares "
        "cancels (1: off; must divide --n-envs)",
        bounds=(1, MAX_VEC_ENVS),
    )
    sde_sample_freq: int = opt(
        0,
        "recommender: PPO's exploration; 0: independent Gaussian noise each step; -1: "
        "state-dependent exploration (gSDE) with one noise matrix per rollout, so a change is "
        "explored consistently over many steps (--action-std then sets the noise matrix's std); "
        "N: gSDE with a new matrix every N steps",
        bounds=(-1, MAX_ROLLOUT_STEPS),
    )
    n_steps: int = opt(64, "PPO rollout steps per env", bounds=(1, MAX_ROLLOUT_STEPS))
    batch_size: int = opt(512, "PPO minibatch size", bounds=(1, MAX_ROLLOUT_STEPS * MAX_VEC_ENVS))
    n_epochs: int = opt(5, "PPO epochs per rollout", bounds=(1, 1000))  # 200 times the default
    learning_rate: float = opt(3e-4, "PPO learning rate", bounds=RATE)
    gamma: float = opt(0.99, "discount", bounds=SHARE)
    gae_lambda: float = opt(0.95, "GAE lambda", bounds=SHARE)
    ent_coef: float = opt(0.0, "entropy bonus", bounds=SHARE)
    time_limit: float = opt(0.0, "stop training after this many seconds (0: none)", bounds=(0.0, MAX_SECONDS))
    out: str = opt("runs/v1", "output folder (model.zip, eval.json, learning_curve.png, tb/)")
    quiet: bool = opt(False, cli=False)  # --quiet: no progress bar or rollout tables

    def __post_init__(self) -> None:
        if self.version is None:  # the task's default version
            self.version = DEFAULT_VERSION[self.task]

    def env(self, population_seed: int | None = None) -> dict:
        """The task's keyword arguments (`tuned_baselines.make_task`)."""
        env = {"users": self.users, "difficulty": self.difficulty, "max_steps": self.max_steps}
        env["population_seed"] = self.population_seed if population_seed is None else population_seed
        env["version"] = self.version
        if self.task == "recommender":
            env["ranking"] = self.ranking
        return env

    def workers(self) -> int:
        """The processes the training episodes are stepped in (`--env-workers`; 0: `auto_workers`)."""
        return self.env_workers or auto_workers(self.n_envs)

    @property
    def task_id(self) -> str:
        """The task's name and version, e.g. "recommender-v2"."""
        return f"{self.task}-v{self.version}"

    def check(self, n_seeds: int = 1) -> None:
        """Every setting in range and the seed sets disjoint from the training seeds of
        `n_seeds` runs (seed .. seed + n_seeds - 1), before any compute (ValueError)."""
        cli_args.check_bounds(self)  # every number in its type and range (the options' bounds)
        if not 1 <= len(self.policy_layers) <= 4:
            raise ValueError(f"--policy-layers must be 1-4 layer sizes, got {list(self.policy_layers)}")
        if self.env_workers > self.n_envs:
            raise ValueError(f"--env-workers must be at most --n-envs ({self.n_envs}), got {self.env_workers}")
        if self.n_envs % self.paired:
            raise ValueError(f"--paired must divide --n-envs ({self.n_envs}), got {self.paired!r}")
        if self.sde_sample_freq and self.task != "recommender":
            raise ValueError("--sde-sample-freq is the recommender's (the moderator's actions are discrete)")
        if self.version not in VERSIONS[self.task]:
            raise ValueError(
                f"--version of the {self.task} must be one of {list(VERSIONS[self.task])}, got {self.version!r}"
            )
        if self.seed + n_seeds - 1 + self.n_envs - 1 > MAX_SEED:  # numpy and torch take seeds up to MAX_SEED
            raise ValueError(f"--seed: the training seeds go past {MAX_SEED} (--seed + --n-envs + runs - 2)")
        train = set(range(self.seed, self.seed + n_seeds - 1 + self.n_envs))
        for name in ("eval_seeds", "tune_seeds"):
            seeds = set(getattr(self, name))
            if not seeds or min(seeds) < 0 or max(seeds) >= 2**20:
                raise ValueError(f"--{name.replace('_', '-')} must be seeds in [0, 2**20) (training draws above)")
            if seeds & train:
                raise ValueError(f"--{name.replace('_', '-')} overlap the training seeds {self.seed}..{max(train)}")
        if set(self.eval_seeds) & set(self.tune_seeds):
            raise ValueError("--eval-seeds and --tune-seeds must be disjoint (never tune on what is scored)")
        if self.eval_population == self.population_seed:
            raise ValueError("--eval-population must differ from --population-seed (a held-out population)")
        if self.anchor in ("tuned_row", "tuned_detector") and (
            self.task != "recommender" or self.ranking != "per_user"
        ):
            raise ValueError(
                f"--anchor {self.anchor} corrects the per-user ranking's global row (recommender, per_user)"
            )
        if self.anchor == "tuned_detector" and not campaign_detector.has_campaigns(self.env()):
            raise ValueError("--anchor tuned_detector needs a tier with campaigns (medium, hard)")


def task_policy(args: Args, anchor: anchored.NoAnchor) -> PolicySpec:
    """PPO's network for the task: the recommender's MLP (Gaussian actions, std 0.14 near an
    anchor, else 0.37, or `--action-std`), the moderator's slot-shared policy (code 0 first)."""
    if args.task == "recommender":  # anchored: explore close to the anchor (std 0.14, else 0.37)
        log_std = -2.0 if isinstance(anchor, anchored.ConstantAnchor) else -1.0
        log_std = float(np.log(args.action_std)) if args.action_std > 0 else log_std
        arch = {"pi": list(args.policy_layers), "vf": [64, 64]}
        return PolicySpec("MlpPolicy", {"net_arch": arch, "log_std_init": log_std})
    # one network shared by the queue's slots; code 0 (the rule's, or none) first
    kwargs = {"n_slots": moderation.QUEUE, "n_global": len(MODERATOR_GLOBALS), "first_bias": args.rule_logit}
    return PolicySpec(SLOT, kwargs)


def sb3_vec_env(args: Args, anchor: anchored.NoAnchor | None = None):
    """The task's native vector env of `args.n_envs` episodes as SB3's VecEnv (`LockstepSB3VecEnv`:
    PPO's actions relative to `anchor`, `args.paired` envs a group), stepped in `args.env_workers`
    processes (`ShardedVectorEnv`; 0: `auto_workers`, 1: in this one); what `train_on_task` and the
    from-scratch agents (`train/scratch.py`) train on."""
    from .sb3_vec_env import LockstepSB3VecEnv

    env = args.env()
    env.pop("version", None)  # the class is the version
    workers = args.workers()
    if workers > 1:
        env_id = f"oasis_gym/{args.task.capitalize()}-v{args.version}"
        venv = ShardedVectorEnv(env_id, args.n_envs, workers, autoreset_mode="SameStep", **env)
    else:
        venv = load_entry_point(VERSIONS[args.task][args.version])(args.n_envs, autoreset_mode="SameStep", **env)
    return LockstepSB3VecEnv(venv, anchor or anchored.NoAnchor(), group=args.paired)


def train_on_task(args: Args, anchor: anchored.NoAnchor | None = None, wrap=None) -> tuple:
    """2. PPO (`ppo.train_ppo`) on the native vector env (its actions relative to `anchor`;
    `wrap(vec_env)`, if given, wraps the SB3 env before normalization: a diagnostic's extra
    observation); returns (model, VecNormalize, run info)."""
    from stable_baselines3.common.vec_env import VecMonitor

    from .callbacks import PairedAdvantages

    anchor = anchor or anchored.NoAnchor()
    inner = sb3_vec_env(args, anchor)
    policy = task_policy(args, anchor)
    cfg = PPOConfig(total_timesteps=args.timesteps, time_limit_s=args.time_limit or None, seed=args.seed,
                    n_steps=args.n_steps, batch_size=args.batch_size, n_epochs=args.n_epochs,
                    learning_rate=args.learning_rate, gamma=args.gamma, gae_lambda=args.gae_lambda,
                    ent_coef=args.ent_coef, sde_sample_freq=args.sde_sample_freq, out_dir=args.out,
                    verbose=0 if args.quiet else 1, progress=not args.quiet, n_envs=args.n_envs,
                    update_threads=args.workers() if policy.policy == SLOT else 1)  # fmt: skip
    paired = (lambda vec, logs: [PairedAdvantages(args.paired)]) if args.paired > 1 else None
    vec_env = VecMonitor(wrap(inner) if wrap else inner)
    model, vec, info = train_ppo(vec_env, policy, cfg, paired, log_name=args.task_id)
    info["timesteps_per_s"] = model.num_timesteps / info["train_seconds"]
    return model, vec, info


def ppo_policy(model, vec, anchor: anchored.NoAnchor | None = None):
    """PPO as `act_for(task)` (deterministic, its actions relative to `anchor`)."""
    return lambda task: anchored.act(model, vec, anchor or anchored.NoAnchor())


def candidates(args: Args, tuned: dict, model, vec, anchor: anchored.NoAnchor | None = None) -> dict:
    """name -> act_for(task) of PPO (its actions relative to `anchor`) and every baseline (as tuned)."""
    return {"ppo": ppo_policy(model, vec, anchor)} | baselines(args, tuned)


def evaluate(args: Args, acts: dict) -> dict:
    """3. every candidate on both held-out sets, paired by seed against PPO."""
    sets = {"held-out seeds": args.population_seed, "held-out population": args.eval_population}
    out = {}
    for name, population in sets.items():
        env = args.env(population)
        runs = {c: tb.per_episode(tb.run_episodes(args.task, env, args.eval_seeds, act_for=f)) for c, f in acts.items()}
        ppo = np.array([r["return"] for r in runs["ppo"]])
        vs = {}
        for c, r in runs.items():
            if c != "ppo":
                d = ppo - np.array([x["return"] for x in r])
                vs[c] = {**mean_ci(d), "wins": int((d > 0).sum())}
        out[name] = {"population_seed": population, "seeds": list(args.eval_seeds), "runs": runs, "ppo_vs": vs}
    return out


def train(args: Args, say=print) -> dict:
    """Steps 1-3 (module docstring); writes eval.json and learning_curve.png under args.out."""
    args.check()
    limit_threads(1)
    train_output(args.out, overwrite=True).claim_trees()
    start = time.perf_counter()
    tuned = tune(args, say)
    tuning_s = time.perf_counter() - start
    anchor = make_anchor(args, tuned)
    model, vec, info = train_on_task(args, anchor)
    info["anchor"] = anchor.name
    rate = info["timesteps_per_s"]
    say(f"trained {info['timesteps']} timesteps in {info['train_seconds']:.0f} s ({rate:.0f} timesteps/s)")
    say(f"evaluating PPO and the baselines on {len(args.eval_seeds)} held-out seeds x 2 sets")
    start = time.perf_counter()
    results = evaluate(args, candidates(args, tuned, model, vec, anchor))
    info |= {"tuning_seconds": tuning_s, "evaluation_seconds": time.perf_counter() - start}
    result = {"task": args.task_id, "settings": dataclasses.asdict(args), "tuned": tuned, "train": info,
              "eval_sets": results, "tables": [task_table(n, r) for n, r in results.items()],
              "users": "rule-based (oasis_gym.batched), no LLM"}  # fmt: skip
    baselines = {
        c: float(np.mean([r["return"] for r in runs]))
        for c, runs in results["held-out seeds"]["runs"].items()
        if c != "ppo"
    }
    write_results(
        args.out,
        result,
        info["learning_curve"],
        baselines,
        f"{args.task_id.capitalize()} ({args.difficulty}): PPO training",
    )
    return result


def progress_printer(quiet: bool):
    """What progress lines go through: stderr, flushed (nothing with --quiet / --json)."""
    return (lambda line: None) if quiet else (lambda line: print(line, file=sys.stderr, flush=True))


def add_options(p: argparse.ArgumentParser) -> None:
    """The options of a v1 training run (the `Args` fields, --overwrite, --json, --quiet)."""
    p.add_argument("--overwrite", action="store_true", help="replace an earlier run's output in --out (nothing else)")
    p.add_argument("--json", action="store_true", help="print one JSON line instead of the tables and summary")
    p.add_argument("--quiet", action="store_true", help="no progress bar, rollout tables or progress lines")
    cli_args.add_arguments(p, Args)


def run_cli(task: str, ns: argparse.Namespace, command: str) -> int:
    """Check everything, train, print the tables and a summary (or one JSON line): `oasis-gym
    train TASK` and `python -m oasis_gym.train.v1 TASK`. Bad settings: one line, exit code 2."""
    args = dataclasses.replace(cli_args.parse_into(Args, ns, Args(task=task)), quiet=ns.quiet or ns.json)
    try:
        args.check()
        output = train_output(args.out, ns.overwrite).check()
    except (ValueError, OSError) as err:
        print(f"{command}: error: {err}", file=sys.stderr)
        return 2
    rollout = args.n_steps * args.n_envs
    if args.timesteps % rollout:  # PPO learns in whole rollouts: say what runs
        used = -(-args.timesteps // rollout) * rollout
        print(f"{command}: --timesteps {args.timesteps} is rounded up to {used} (whole rollouts of --n-steps "
              f"{args.n_steps} x --n-envs {args.n_envs})", file=sys.stderr)  # fmt: skip
    say = progress_printer(args.quiet)
    with staged_training(output, say):
        result = train(args, say=say)
    held = result["eval_sets"]["held-out seeds"]
    if not ns.json:
        print("\n\n".join(result["tables"]))
    fair = [c for c in held["ppo_vs"] if "privileged" not in c]  # the truth rule reads the labels
    best = min(fair, key=lambda c: held["ppo_vs"][c]["mean"])
    v = held["ppo_vs"][best]
    verdict = "beats" if v["lo"] > 0 else ("loses to" if v["hi"] < 0 else "is not distinguishable from")
    Summary(
        f"\nPPO ({result['train']['timesteps']:,} timesteps) {verdict} its strongest baseline, {best} "
        f"({v['mean']:+.2f} [{v['lo']:+.2f}, {v['hi']:+.2f}] return on held-out seeds; rule-based users; "
        f"constants tuned by CEM {args.cem_iterations} x {args.cem_population} "
        f"on {plural(len(args.tune_seeds), 'seed')}).",
        outputs=[(f"{args.out}/eval.json", "every policy on the held-out seeds and population"),
                 (f"{args.out}/learning_curve.png", "PPO's return while it trained"),
                 (f"{args.out}/model.zip", "the trained policy (SB3)")],
        next=[(f"tensorboard --logdir {args.out}/tb", "the training curves"), benchmark_next(args, result["train"])],
        data={"task": result["task"], "difficulty": args.difficulty, "timesteps": result["train"]["timesteps"],
              "out": args.out, "ppo_vs": {c: v["mean"] for c, v in held["ppo_vs"].items()}},
    ).show(as_json=ns.json)  # fmt: skip
    return 0


def benchmark_next(args: Args, info: dict, seeds: int = 5) -> tuple[str, str]:
    """The benchmark of this run's settings as the next command, and how long it takes at this
    run's speed (tuning once, then PPO and the evaluation for each of `seeds` training seeds)."""
    mine = dataclasses.replace(args, out=f"{args.out.rstrip('/')}-benchmark")  # its own folder beside this run's
    argv = ["oasis-gym", "benchmark", args.task, *cli_args.changed_options(mine, Args(task=args.task))]
    took = info["tuning_seconds"] + seeds * (info["train_seconds"] + info["evaluation_seconds"])
    return shlex.join(argv), (
        f"{seeds} training seeds with confidence intervals: about {duration(took)} at this run's speed"
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: `python -m oasis_gym.train.v1 {recommender,moderator} [options]`."""
    p = OneLineParser(description=__doc__.split("\n")[0])
    p.add_argument("task", choices=TASKS)
    add_options(p)
    ns = p.parse_args(argv)
    return run_cli(ns.task, ns, f"python -m oasis_gym.train.v1 {ns.task}")


if __name__ == "__main__":
    sys.exit(main())
