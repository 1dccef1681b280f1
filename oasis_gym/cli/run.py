"""`oasis-gym run`: a simulation with the users' policy of `--policy`, journaled, with
TensorBoard metrics (or a scenario with `--scenario`, or a resumed run with `--resume`)."""

from __future__ import annotations

import os
import time

import numpy as np

from oasis_gym.app.console import Summary, duration, plural, quoted, timed
from oasis_gym.app.run import simulate
from oasis_gym.envs import reddit_v0, twitter_v0
from oasis_gym.envs.social_env import SocialMediaEnv
from oasis_gym.errors import ConfigError
from oasis_gym.metrics import MetricsRecorder
from oasis_gym.outputs.logdir import claim_logdir, logdir_for
from oasis_gym.platform.journal_file import check_distinct, refusal
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.factory import llm_backend, llm_policy, on_first_use, user_policy
from oasis_gym.policies.hybrid import HybridPolicy
from oasis_gym.policies.llm.backends.vllm_backend import quiet_logs
from oasis_gym.policies.llm.defaults import LazyBackend, default_cache_dir, ensure_smollm2, smollm2_converted
from oasis_gym.scenarios import run_scenario_cli
from oasis_gym.sim.content import template_text

from .interrupt import run_stopped
from .resume import resumed_args, saved_settings


def make_policy(args, env, llm=None):
    """The users' policy of `args.policy` (`policies.factory.user_policy`); `llm`: the LLM
    policy, if already made. A new hybrid run gives the LLM to the `--core-users`
    most-followed users and keeps their ids in `args.core_ids` (a resumed run reuses them)."""

    def make_llm():
        return llm if llm is not None else make_llm_policy(args)

    core_ids = getattr(args, "core_ids", None)
    if args.policy == "hybrid" and core_ids is None:
        policy = HybridPolicy.top_k_by_followers(env, make_llm(), ABMPolicy(), args.core_users)
        args.core_ids = policy.routes[0][1].tolist()
        return policy
    return user_policy(args.policy, llm=make_llm, core_ids=core_ids)


def make_llm_policy(args):
    """The LLM users' policy of the run's --llm-* settings (`policies.factory`); a bad or
    missing backend is a `ConfigError`."""
    endpoint_kw = {
        k: v
        for k, v in (
            ("request_timeout", getattr(args, "llm_timeout", None)),
            ("max_retries", getattr(args, "llm_retries", None)),
        )
        if v is not None
    }
    if endpoint_kw and args.llm_backend != "openai":
        raise ConfigError("--llm-timeout and --llm-retries apply to the openai backend (--llm-backend openai)")
    if "request_timeout" in endpoint_kw:  # a refused connection should not wait longer than a reply
        endpoint_kw["connect_timeout"] = min(5.0, endpoint_kw["request_timeout"])
    quiet_logs()  # vLLM's INFO logs would flood stderr; VLLM_LOGGING_LEVEL=INFO brings them back
    quiet = getattr(args, "quiet", False)

    def prepare():
        if args.llm_model is None and args.llm_backend != "openai":
            convert_default_model(quiet=quiet)

    def start():  # at the first LLM decision: a run whose LLM users never act starts no engine
        with timed("starting the LLM engine for the first active LLM users", quiet=quiet):
            return llm_backend(
                args.llm_backend, model=args.llm_model, endpoints=args.llm_endpoint, announce=True, **endpoint_kw
            )

    backend = on_first_use(args.llm_backend, start, prepare=prepare, model=args.llm_model)
    options = {"step_deadline_s": getattr(args, "llm_step_deadline", None)}
    if getattr(args, "llm_frequency_penalty", None) is not None:
        options["frequency_penalty"] = args.llm_frequency_penalty
    try:
        return llm_policy(backend, **options)
    except ValueError as err:  # a deadline the backend cannot keep
        raise ConfigError(f"--llm-step-deadline: {err}") from err


def convert_default_model(quiet: bool = False) -> None:
    """The default model's one-time conversion (SmolLM2-135M's shipped GGUF into safetensors in
    the cache folder) as a step of its own, announced and timed on stderr (`--quiet`: silent,
    transformers' bars included); nothing once it is done."""
    if smollm2_converted():
        return
    if quiet:
        from transformers.utils import logging as transformers_logging  # (the conversion imports it anyway)

        transformers_logging.disable_progress_bar()
    what = f"first run only: converting the default model SmolLM2-135M into {default_cache_dir()}"
    try:
        with timed(what, quiet=quiet, after=0):
            ensure_smollm2()
    except ImportError as err:
        raise ConfigError(f"no LLM backend available: {err}. Run without an LLM: --policy abm") from err


def check_paths(args) -> None:
    """The journal must not be one of the run's input or output files."""
    scenario = getattr(args, "scenario", None)
    check_distinct(
        args.resume or args.db,
        {
            "profile file (--users)": args.users if isinstance(args.users, str) else None,
            "scenario file (--scenario)": scenario if scenario and os.path.isfile(scenario) else None,
            "figures file (--figures)": getattr(args, "figures", None),
            "TensorBoard folder (--logdir)": args.logdir,
            "LLM model (--llm-model)": args.llm_model,
        },
    )


def cmd_run(args) -> int:
    """Run (or resume) the simulation of `args`; end with its summary (`--json`: one JSON line
    of figures)."""
    started = time.perf_counter()
    check_paths(args)
    if getattr(args, "scenario", None):
        if args.resume:
            raise ConfigError("--resume continues an 'oasis-gym run' journal; a scenario runs from its start")
        return run_scenario_cli(args)
    if args.resume:
        args = resumed_args(args)
    if not args.no_tensorboard:  # a file, other files or another run's logs there: one line, before anything runs
        where = logdir_for(args.db, args.logdir, overwrite=args.overwrite, resume=bool(args.resume))
        args.logdir = str(where)  # saved with the journal: a resumed run writes where this one did
    logdir = None if args.no_tensorboard else args.logdir
    if not args.resume and (refused := refusal(args.db, args.overwrite)[1]):
        raise ConfigError(refused)  # before the LLM engine starts (checked again under the journal's lock)
    # the LLM backend's packages first: a missing one ends the run before any journal is written (the
    # engine itself starts at the first LLM decision, `policies.factory.on_first_use`)
    try:
        llm = make_llm_policy(args) if args.policy in ("hybrid", "llm") else None
    except ValueError as err:  # make_backend's checks of the LLM settings
        raise ConfigError(f"bad LLM settings: {err}") from err
    if args.resume:
        env = SocialMediaEnv.resume(args.db, max_cycles=args.steps)
    else:
        args.steps = args.steps or 20
        module = twitter_v0 if args.platform == "twitter" else reddit_v0
        kwargs = {
            "users": args.users,
            "max_cycles": args.steps,
            "db_path": args.db,
            "overwrite": args.overwrite,
            "activation": args.activation if args.activation == "activity" else float(args.activation),
        }
        if args.recsys:
            kwargs["recsys"] = args.recsys
        if args.all_actions:
            kwargs["available_actions"] = tuple(range(23))
        if isinstance(args.users, int) and args.seed_posts > 0:
            kwargs["setup"] = seed_posts_setup(args.seed_posts)
        env = module.parallel_env(**kwargs)
    # saved with every commit from the journal's first on (read live: make_policy adds core_ids),
    # so a run killed before its first step is resumable
    env.sim.state_providers["cli"] = lambda: saved_settings(args)
    recorder = stopped = None
    try:
        if not args.resume:
            env.reset(seed=args.seed)
        policy = make_policy(args, env, llm)
        policy.reset(env, np.arange(env.sim.platform.n_users), args.seed)
        if args.resume and "policy" in env.sim.saved_state:
            policy.load_state_dict(env.sim.saved_state["policy"])
        if logdir is not None:
            claim_logdir(logdir, args.db, overwrite=args.overwrite, resume=bool(args.resume))
            recorder = MetricsRecorder(logdir)
            recorder.attach(env.sim)
            recorder.on_reset(env.sim)
        summary = simulate(env, policy, args.steps - env._cycles, seed=args.seed, reset=False, progress=not args.quiet)
    except KeyboardInterrupt as err:  # Ctrl-C or SIGTERM: the steps done are committed by env.close()
        stopped = (err, env.sim.journal is not None)  # this run's journal exists (reset or resume made it)
    finally:
        if recorder is not None:
            recorder.close()
        env.close()
    if stopped is not None:
        raise run_stopped(*stopped, db=args.db, steps=args.steps)
    lazy = llm.core.backend if llm is not None and isinstance(llm.core.backend, LazyBackend) else None
    engine_s, conversion_s = (lazy.start_s, lazy.prepare_s) if lazy is not None else (None, None)
    # the engine starts (after the model's one-time conversion) inside the step its first LLM user acts in
    steps_s = summary.seconds - (engine_s or 0.0) - (conversion_s or 0.0)
    data = {
        "steps": summary.steps,
        "actions": summary.actions,
        "accepted": summary.accepted,
        "actions_per_s": round(summary.actions / steps_s, 1) if steps_s > 0 else 0.0,
        "seconds": round(time.perf_counter() - started, 3),
        "steps_s": round(steps_s, 3),
        **({"engine_start_s": round(engine_s, 3)} if engine_s is not None else {}),
        **({"model_conversion_s": round(conversion_s, 3)} if conversion_s and conversion_s >= 0.05 else {}),
        "db": args.db,
        "logdir": recorder.logdir if recorder is not None else None,
        **({"llm": summary.llm} if summary.llm else {}),
    }
    run_summary(data, summary, args, env).show(getattr(args, "json", False))
    return 0


def run_summary(data: dict, summary, args, env) -> Summary:
    """What `oasis-gym run` says at its end: the run in one line, its journal and logs, and the
    commands that report, show and continue it (`data`: the ``--json`` line)."""
    users = env.sim.platform.n_users
    where = f" (now at step {env._cycles} of {args.steps})" if args.resume else ""
    parts = [f"the steps {duration(data['steps_s'])}"]
    if "engine_start_s" in data:
        parts.append(f"LLM engine start {duration(data['engine_start_s'])}")
    if "model_conversion_s" in data:
        parts.append(f"the model's one-time conversion {duration(data['model_conversion_s'])}")
    done = (
        f"{'Resumed' if args.resume else 'Ran'} {plural(summary.steps, 'step')} of {plural(users, 'user')}{where} in "
        f"{duration(data['seconds'])} ({', '.join(parts)}): {plural(summary.actions, 'action')}, "
        f"{summary.accepted:,} accepted, {data['actions_per_s']:,.0f} actions/s in the steps."
    )
    llm = summary.llm
    if llm and not llm.get("agents") and "engine_start_s" not in data:
        done += "\nLLM users: none was active, so no LLM engine was started."
    elif llm:
        done += (
            f"\nLLM users: {plural(llm.get('agents', 0), 'decision')} ({llm.get('valid', 0):,} valid replies), "
            f"{llm.get('decisions_per_s', 0):.3g} decisions/s"
            + (f", prefix cache hit rate {llm['prefix_cache_hit_rate']:.0%}" if "prefix_cache_hit_rate" in llm else "")
            + "."
        )
    outputs = [(args.db, "the journal: SQLite with OASIS's tables (user, post, follow, like, trace, ...)")]
    nxt = [(quoted(["oasis-gym", "report", args.db]), "PNG plots and summary.txt of the run")]
    if data["logdir"]:
        outputs.append((data["logdir"], "TensorBoard logs of the society's metrics"))
        nxt.append((quoted(["tensorboard", "--logdir", data["logdir"]]), "the metrics, step by step"))
    more = ["oasis-gym", "run", "--resume", args.db, "--steps", str(args.steps + max(summary.steps, 1))]
    nxt.append((quoted(more), "continue the run"))
    return Summary(done, outputs, nxt, data)


def seed_posts_setup(count: int):
    """A setup hook: the `count` most-followed users (one post each, wrapping around) wrote
    posts before step 0 whose wording and stance follow their opinion, so a synthetic
    population starts with something to read."""

    def setup(sim) -> None:
        pf = sim.platform
        authors = pf.most_followed(max(1, min(count, pf.n_users)))
        authors = np.resize(authors, count)
        stance = pf.u_opinion.a[authors]
        rng = np.random.default_rng(sim.seed)
        texts = template_text(stance, "the news", rng)
        pf.create_posts(authors, texts, stance=stance)

    return setup
