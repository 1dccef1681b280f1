"""A training script's command line, generated from its `Args` dataclass (CleanRL style).

Each field with ``opt(...)`` metadata (or a plain default) becomes ``--field-name`` with the
field's default and help; the type comes from the default (or ``type=`` where the default
is None). A tuple default takes ``nargs="+"``; ``cli=False`` keeps a field off the command
line. `parse_into` turns the parsed namespace back into the dataclass.

`TrainArgs` holds the settings both training scripts share; each script's `Args` subclasses
it and `redeclare`s a field to change its default or help.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from oasis_gym.checks import MAX_ID, finite_number, path_name, whole_number
from oasis_gym.errors import ConfigError

from .common import EnvConfig, PPOConfig
from .report import check_disjoint, default_eval_sets

MAX_ENVS = 256  # subprocess envs of one training run


def opt(default: Any = dataclasses.MISSING, help: str = "", *, cli: bool = True, **argparse_kw: Any) -> Any:
    """A dataclass field with its command-line help (and argparse options such as `type`,
    `choices`, `action`, `metavar`); a list/dict default is given as a factory."""
    meta = {"help": help, "cli": cli, "argparse": argparse_kw}
    if isinstance(default, (list, dict)):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def cli_fields(cls) -> list[dataclasses.Field]:
    """The fields of `cls` that are command-line options."""
    return [f for f in dataclasses.fields(cls) if f.init and f.metadata.get("cli", True)]


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def add_arguments(parser: argparse.ArgumentParser, cls) -> None:
    """``--name`` options for every command-line field of `cls`, defaults and help from it."""
    for f in cli_fields(cls):
        default = _default(f)
        text = f.metadata.get("help", "")
        if default is not None and not isinstance(default, (list, dict)):
            text = f"{text} (default: %(default)s)".strip()
        kw: dict[str, Any] = {"default": default, "help": text or None}
        if isinstance(default, tuple):
            kw.update(nargs="+", type=type(default[0]), default=list(default))
        elif isinstance(default, bool):
            kw.update(type=lambda s: s.lower() in ("1", "true", "yes"))
        elif isinstance(default, dict):  # repeated KEY=VALUE options, appended to a fresh list
            kw["default"] = list(default.items())
        elif default is not None and not isinstance(default, list):
            kw["type"] = type(default)
        kw.update(f.metadata.get("argparse", {}))
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, **kw)


def parse_into(cls, ns: argparse.Namespace, defaults=None):
    """`cls` (or `defaults` with these values replaced) from a parsed namespace: tuples stay
    tuples, an appended list of (key, value) pairs for a dict field becomes a dict."""
    values = {}
    for f in cli_fields(cls):
        value, default = getattr(ns, f.name), _default(f)
        if isinstance(default, tuple) and value is not None:
            value = tuple(value)
        elif isinstance(default, dict) and not isinstance(value, dict):
            value = dict(value or [])
        values[f.name] = value
    return dataclasses.replace(defaults, **values) if defaults is not None else cls(**values)


def changed_options(obj, defaults) -> list[str]:
    """The command-line options that give `obj` its values where they differ from `defaults`'s
    (what `parse_into` reads back), e.g. ``["--users", "200", "--eval-seeds", "9000", "9001"]``."""
    argv: list[str] = []
    for f in cli_fields(type(obj)):
        value = getattr(obj, f.name)
        if value == getattr(defaults, f.name):
            continue
        values = value if isinstance(value, tuple) else [value]
        argv += ["--" + f.name.replace("_", "-"), *map(str, values)]
    return argv


def key_value(text: str) -> tuple[str, float]:
    """``KEY=NUMBER`` -> (key, float); anything else is an argparse error (one line, exit 2)."""
    key, sep, value = text.partition("=")
    try:
        if not sep or not key:
            raise ValueError
        return key, finite_number(value)
    except ValueError:  # a ConfigError too: NaN and infinities are no reward weights
        raise argparse.ArgumentTypeError(f"expected KEY=NUMBER (a finite number), got {text!r}") from None


def redeclare(cls, name: str, default: Any = dataclasses.MISSING, help: str | None = None) -> Any:
    """Field `name` of dataclass `cls` again, with another default and/or help and the same
    command-line options otherwise: how a script's `Args` changes a field of `TrainArgs`."""
    f = cls.__dataclass_fields__[name]
    meta = f.metadata
    return opt(
        _default(f) if default is dataclasses.MISSING else default,
        meta["help"] if help is None else help,
        cli=meta["cli"],
        **meta["argparse"],
    )


@dataclasses.dataclass
class RunArgs:
    """The first settings of `TrainArgs`: the run's budget, the env's size and the evaluation
    sets. A script adds its own evaluation settings after them by deriving a class from this
    one and putting it second among its `Args`' bases (`moderator.Args`)."""

    timesteps: int = opt(
        60_000,
        "PPO timesteps (summed over envs), >= 1; PPO learns in whole rollouts of --n-steps x --n-envs, so "
        "a number that is no multiple is rounded up to one: the number used is printed and saved in eval.json",
    )
    time_limit: float | None = opt(None, "stop training after this many seconds", type=float)
    n_envs: int = opt(2, "subprocess envs")
    seed: int = opt(0, "training seed")
    users: int | None = opt(None, "default: the scenario's 1000", type=int)
    max_cycles: int | None = opt(None, "episode length (default 50)", type=int)
    eval_seeds: tuple[int, ...] = opt(
        (1000, 1001, 1002, 1003, 1004),
        "held-out episode seeds (< 2**20), run on the training population and on --other-population",
    )
    other_population: int = opt(1, "population seed of the held-out population")


@dataclasses.dataclass
class TrainArgs(RunArgs):
    """The settings both training scripts share, with their defaults (PPO's are `PPOConfig`'s;
    `kind`, `out`, `baselines` and the `agent_param` help are each script's own). The command
    line is generated from the fields (`--time-limit` for `time_limit`, ...). `env` and `ppo`
    are built from them at construction: change a field with `dataclasses.replace`, or those
    two objects directly."""

    eval_every: int = opt(0, "timesteps between TensorBoard evaluations (0: off)")
    lr: float = opt(3e-4, "learning rate")
    gamma: float = opt(0.9, "discount")
    policy: str = opt("mlp", "network", choices=("mlp", "slot"))
    n_steps: int = opt(250, "rollout steps per env")
    batch_size: int = opt(250, cli=False)  # capped at n_steps * n_envs
    first_bias: float = opt(0.0, cli=False)  # slot policy: initial logit bonus of "none"
    ent_coef: float = opt(0.0, "entropy coefficient")
    agent_param: dict = opt(
        {}, "agent field (its reward weights; repeatable)", type=key_value, action="append", metavar="KEY=VALUE"
    )
    out: str = opt("runs/train", "output folder (model, checkpoints, TensorBoard, eval.json)")
    baselines: tuple[str, ...] = opt((), cli=False)
    kind: str = opt("recommender", cli=False)
    quiet: bool = opt(True, cli=False)  # no progress bar or rollout tables (the CLI: unless --quiet / --json)
    env: EnvConfig = dataclasses.field(init=False)
    ppo: PPOConfig = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.env, self.ppo = configs(self)
        check(self)


def configs(a) -> tuple[EnvConfig, PPOConfig]:
    """The (EnvConfig, PPOConfig) of a `TrainArgs` (a script's `Args`), built at its construction."""
    env = EnvConfig(kind=a.kind, users=a.users, max_cycles=a.max_cycles, agent_params=dict(a.agent_param))
    ppo = PPOConfig(
        total_timesteps=a.timesteps,
        time_limit_s=a.time_limit,
        n_envs=a.n_envs,
        seed=a.seed,
        eval_every=a.eval_every,
        learning_rate=a.lr,
        gamma=a.gamma,
        policy=a.policy,
        n_steps=a.n_steps,
        batch_size=min(a.batch_size, a.n_steps * a.n_envs),  # a batch never exceeds a rollout
        first_bias=a.first_bias,
        ent_coef=a.ent_coef,
        out_dir=a.out,
        verbose=0 if a.quiet else 1,
        progress=not a.quiet,
    )
    return env, ppo


def rollout_timesteps(a) -> int:
    """The timesteps PPO runs for `a.timesteps` (whole rollouts of n_steps x n_envs), unless
    `--time-limit` stops it first."""
    rollout = a.ppo.n_steps * a.ppo.n_envs
    return -(-a.ppo.total_timesteps // rollout) * rollout


def check(a) -> None:
    """Every setting of a `TrainArgs` in its type and range, before anything is built: a
    `ConfigError` (one line on the command line) naming the option."""
    path_name(a.out, "--out")
    whole_number(a.timesteps, "--timesteps", 1, MAX_ID)
    whole_number(a.n_envs, "--n-envs", 1, MAX_ENVS)
    whole_number(a.n_steps, "--n-steps", 1, MAX_ID)
    if a.n_steps * a.n_envs < 2:
        raise ConfigError("--n-steps x --n-envs: a PPO rollout needs at least 2 timesteps")
    whole_number(a.seed, "--seed", 0)
    whole_number(a.eval_every, "--eval-every", 0, MAX_ID)
    whole_number(a.other_population, "--other-population", 0)
    for value, name in ((a.users, "--users"), (a.max_cycles, "--max-cycles")):
        if value is not None:
            whole_number(value, name, 1, MAX_ID)
    if a.time_limit is not None:
        finite_number(a.time_limit, "--time-limit", 1e-3)
    finite_number(a.lr, "--lr", 1e-12, 1.0)
    finite_number(a.gamma, "--gamma", 0.0, 1.0)
    finite_number(a.ent_coef, "--ent-coef", 0.0)
    for seed in a.eval_seeds:
        whole_number(seed, "--eval-seeds", 0)
    sets = default_eval_sets(a.eval_seeds, a.env.population_seed, a.other_population)
    try:
        check_disjoint(sets, a.seed, a.n_envs, a.env.population_seed)
    except ValueError as err:
        raise ConfigError(f"--eval-seeds: {err}") from None
