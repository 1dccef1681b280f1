"""A training script's command line, generated from its `Args` dataclass (one dataclass
of options, as CleanRL's; a script's `Args` subclasses `TrainArgs` and changes defaults with `redeclare`).

Each field with ``opt(...)`` metadata (or a plain default) becomes ``--field-name`` with the
field's default and help; the type comes from the default (or ``type=`` where the default
is None). A tuple default takes ``nargs="+"``; ``cli=False`` keeps a field off the command
line. A number's ``bounds=(low, high)`` are checked by the option's type (one line, exit code
2), stated in its help, and checked again by `check_bounds` for an `Args` built in Python.
`parse_into` turns the parsed namespace back into the dataclass.

`TrainArgs` holds the settings both training scripts share; each script's `Args` subclasses
it and `redeclare`s a field to change its default or help.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from oasis_gym.checks import (
    MAX_ID,
    MAX_SEED,
    MAX_USERS,
    argtype,
    bounds_text,
    finite_number,
    path_name,
    population_size,
    whole_number,
    with_bounds,
)
from oasis_gym.errors import ConfigError

from .common import EnvConfig
from .ppo import PPOConfig
from .report import check_disjoint, default_eval_sets

MAX_ENVS = 256  # subprocess envs of one training run
MAX_EPISODE_STEPS = 10_000  # an episode's steps: 100 times the longest default episode
MAX_ROLLOUT_STEPS = 10_000  # PPO's rollout steps per env (its buffer holds n_steps x n_envs observations)
MAX_SECONDS = 10**7  # a time limit: about 116 days
EVAL_SEEDS = (0, 2**20 - 1)  # held-out episode seeds: training draws its episode seeds above them
SHARE, RATE = (0.0, 1.0), (1e-12, 1.0)  # a discount or GAE lambda; a learning rate


def opt(
    default: Any = dataclasses.MISSING,
    help: str = "",
    *,
    cli: bool = True,
    bounds: tuple | None = None,
    check: Any = None,
    **argparse_kw: Any,
) -> Any:
    """A dataclass field with its command-line help (and argparse options such as `type`,
    `choices`, `action`, `metavar`); a list/dict default is given as a factory. `bounds`:
    (low, high) of a number (of each number of a tuple), inclusive, checked by `check`
    (default: `whole_number` or `finite_number`, by the default's type)."""
    meta = {"help": help, "cli": cli, "bounds": bounds, "check": check, "argparse": argparse_kw}
    if isinstance(default, (list, dict)):
        value = default
        return dataclasses.field(default_factory=lambda: type(value)(value), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


def cli_fields(cls) -> list[dataclasses.Field]:
    """The fields of `cls` that are command-line options."""
    return [f for f in dataclasses.fields(cls) if f.init and f.metadata.get("cli", True)]


def _default(f: dataclasses.Field) -> Any:
    return f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default


def _check_of(f: dataclasses.Field) -> Any:
    """The check of a bounded field's numbers: `whole_number` or `finite_number`."""
    default, kind = _default(f), f.metadata["argparse"].get("type")
    number = default[0] if isinstance(default, tuple) else default
    if f.metadata.get("check") is not None:
        return f.metadata["check"]
    return finite_number if float in (kind, type(number)) else whole_number


def add_arguments(parser: argparse.ArgumentParser, cls) -> None:
    """``--name`` options for every command-line field of `cls`, defaults and help from it."""
    for f in cli_fields(cls):
        default, bounds = _default(f), f.metadata.get("bounds")
        kw: dict[str, Any] = {"default": default}
        if isinstance(default, tuple):
            kw.update(nargs="+", type=type(default[0]), default=list(default))
        elif isinstance(default, bool):
            kw.update(type=lambda s: s.lower() in ("1", "true", "yes"))
        elif isinstance(default, dict):  # repeated KEY=VALUE options, appended to a fresh list
            kw["default"] = list(default.items())
        elif default is not None and not isinstance(default, list):
            kw["type"] = type(default)
        kw.update(f.metadata.get("argparse", {}))
        if bounds is not None:
            kw["type"] = argtype(_check_of(f), f"number in {bounds_text(*bounds)}", low=bounds[0], high=bounds[1])
        text = f.metadata.get("help", "")
        if hasattr(kw.get("type"), "bounds"):  # the range its type takes
            text = with_bounds(text, kw["type"])
        if default is not None and not isinstance(default, (list, dict)):
            text = f"{text} (default: %(default)s)".strip()
        kw["help"] = text or None
        parser.add_argument("--" + f.name.replace("_", "-"), dest=f.name, **kw)


def check_bounds(a) -> None:
    """Every bounded field of the dataclass `a` (each number of a tuple; None: unset) in its
    type and range: a `ConfigError` naming the option, as its command line says it."""
    for f in cli_fields(type(a)):
        bounds, value = f.metadata.get("bounds"), getattr(a, f.name)
        if bounds is None or value is None:
            continue
        check, name = _check_of(f), "--" + f.name.replace("_", "-")
        for v in value if isinstance(value, (tuple, list)) else (value,):
            check(v, name, *bounds)


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


AGENT_PARAM = (-1e6, 1e6)  # an agent field: a million times the scale of its reward weights


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
        return key, finite_number(value, None, *AGENT_PARAM)
    except ValueError:  # a ConfigError too: NaN and infinities are no reward weights
        raise argparse.ArgumentTypeError(
            f"expected KEY=NUMBER (a finite number in {bounds_text(*AGENT_PARAM)}), got {text!r}"
        ) from None


key_value.bounds = AGENT_PARAM


def redeclare(cls, name: str, default: Any = dataclasses.MISSING, help: str | None = None) -> Any:
    """Field `name` of dataclass `cls` again, with another default and/or help and the same
    command-line options otherwise: how a script's `Args` changes a field of `TrainArgs`."""
    f = cls.__dataclass_fields__[name]
    meta = f.metadata
    return opt(
        _default(f) if default is dataclasses.MISSING else default,
        meta["help"] if help is None else help,
        cli=meta["cli"],
        bounds=meta["bounds"],
        check=meta["check"],
        **meta["argparse"],
    )


@dataclasses.dataclass
class RunArgs:
    """The first settings of `TrainArgs`: the run's budget, the env's size and the evaluation
    sets. A script adds its own evaluation settings after them by deriving a class from this
    one and putting it second among its `Args`' bases (`moderator.Args`)."""

    timesteps: int = opt(
        60_000,
        "PPO timesteps (summed over envs); PPO learns in whole rollouts of --n-steps x --n-envs, so "
        "a number that is no multiple is rounded up to one: the number used is printed and saved in eval.json",
        bounds=(1, MAX_ID),
    )
    time_limit: float | None = opt(
        None, "stop training after this many seconds", type=float, bounds=(1e-3, MAX_SECONDS)
    )
    n_envs: int = opt(2, "subprocess envs", bounds=(1, MAX_ENVS))
    seed: int = opt(0, "training seed", bounds=(0, MAX_SEED))
    users: int | None = opt(
        None,
        "default: the scenario's 1000; at most what the memory holds too",
        type=int,
        bounds=(1, MAX_USERS),
        check=population_size,
    )
    max_cycles: int | None = opt(None, "episode length (default 50)", type=int, bounds=(1, MAX_EPISODE_STEPS))
    eval_seeds: tuple[int, ...] = opt(
        (1000, 1001, 1002, 1003, 1004),
        "held-out episode seeds, run on the training population and on --other-population",
        bounds=EVAL_SEEDS,
    )
    other_population: int = opt(1, "population seed of the held-out population", bounds=(0, MAX_SEED))


@dataclasses.dataclass
class TrainArgs(RunArgs):
    """The settings both training scripts share, with their defaults (PPO's are `PPOConfig`'s;
    `kind`, `out`, `baselines` and the `agent_param` help are each script's own). The command
    line is generated from the fields (`--time-limit` for `time_limit`, ...). `env` and `ppo`
    are built from them at construction: change a field with `dataclasses.replace`, or those
    two objects directly."""

    eval_every: int = opt(0, "timesteps between TensorBoard evaluations (0: off)", bounds=(0, MAX_ID))
    lr: float = opt(3e-4, "learning rate", bounds=RATE)
    gamma: float = opt(0.9, "discount", bounds=SHARE)
    policy: str = opt("mlp", "network", choices=("mlp", "slot"))
    n_steps: int = opt(250, "rollout steps per env", bounds=(1, MAX_ROLLOUT_STEPS))
    batch_size: int = opt(250, cli=False)  # capped at n_steps * n_envs
    first_bias: float = opt(0.0, cli=False)  # slot policy: initial logit bonus of "none"
    ent_coef: float = opt(0.0, "entropy coefficient", bounds=SHARE)
    agent_param: dict = opt(
        {},
        "agent field (its reward weights; repeatable)",
        type=key_value,
        action="append",
        metavar="KEY=VALUE",
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
    check_bounds(a)
    if a.n_steps * a.n_envs < 2:
        raise ConfigError("--n-steps x --n-envs: a PPO rollout needs at least 2 timesteps")
    if a.seed + a.n_envs - 1 > MAX_SEED:  # env i trains on seed + i
        raise ConfigError(f"--seed: the training seeds --seed .. --seed + --n-envs - 1 must be at most {MAX_SEED}")
    sets = default_eval_sets(a.eval_seeds, a.env.population_seed, a.other_population)
    try:
        check_disjoint(sets, a.seed, a.n_envs, a.env.population_seed)
    except ValueError as err:
        raise ConfigError(f"--eval-seeds: {err}") from None
