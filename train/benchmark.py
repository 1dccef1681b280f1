"""`oasis-gym benchmark TASK`: the v1 benchmark protocol, N training seeds against tuned baselines.

    oasis-gym benchmark recommender --difficulty medium --seeds 5 --timesteps 1000000 --out bench-runs/rec-medium

Steps (read top to bottom):
1. the baselines, tuned once on the tuning seeds of the training population
   (`train.v1_baselines.tune`; the recommender's best per-user and best global constant
   ranking by the cross-entropy method, and in tiers with campaigns the campaign detector's and the
   privileged told-the-campaign change of it, `train/campaign_detector.py`; the
   moderator's best threshold rules by grid search and its label classifier), with the env
   steps each search used;
2. PPO trained from `--seeds` training seeds (`train.v1.train_on_task`, one folder each);
3. every PPO model and every baseline on the held-out seeds of the training population and
   on a held-out population, one episode per evaluation seed;
4. the results: per candidate the mean ± std of the return (PPO: over training seeds of each
   seed's mean); PPO minus each baseline per training seed (mean over the evaluation
   episodes), with its 95 % t interval over the training seeds and PPO's paired wins over
   all (training seed, episode) pairs; the learning curves of all seeds with their band
   (PNG and TensorBoard); per candidate the IQM and mean with 95 % stratified bootstrap
   intervals over runs x episodes, PPO's probability of improvement over each baseline and the
   performance profiles (`train/rl_stats.py`, `performance_profiles.png`); the versions, settings
   and machine. `results.md` (Markdown) and `results.json` under `--out`. Users are rule-based
   (`oasis_gym.batched`), never LLMs.

Any agent, one call: `evaluate(policy, task, difficulty)` scores a policy (a callable from a batch of
observations to a batch of actions, or an SB3 model) on the same held-out seeds and population
with the same code (`play`), with the same statistics, against the benchmark's baselines (`against=`
its results.json) or the platform's default.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path

import gymnasium
import numpy as np

from oasis_gym.app.console import Summary
from oasis_gym.checks import int_option, whole_number, with_bounds
from oasis_gym.figures import PALETTE, new_figure, save_png, series_style
from oasis_gym.metrics.intervals import mean_ci

from . import args as cli_args
from . import rl_stats, v1, v1_baselines
from .common import limit_threads
from .outputs import benchmark_output, staged_training, train_output
from .protocol import candidate_scores, evaluate, held_out, play

__all__ = ["evaluate", "run", "markdown", "compare", "cmd_benchmark", "add_benchmark_parser"]

MAX_SEEDS = 100  # PPO training runs of one benchmark


def _environment() -> dict:
    """The versions and machine a result was made with."""
    import stable_baselines3
    import torch

    return {"python": platform.python_version(), "numpy": np.__version__, "torch": torch.__version__,
            "stable_baselines3": stable_baselines3.__version__, "gymnasium": gymnasium.__version__,
            "oasis_gym": metadata.version("oasis-gym"), "machine": platform.machine(),
            "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}  # fmt: skip


def _episode_returns(runs: list[dict]) -> np.ndarray:
    return np.array([r["return"] for r in runs], np.float64)


def compare(ppo_runs: list[list[dict]], baselines: dict[str, list[dict]]) -> dict:
    """PPO (one list of episodes per training seed) against each baseline on the same episodes:
    the per-seed mean difference, its 95 % t interval over training seeds, paired wins."""
    ppo = np.stack([_episode_returns(r) for r in ppo_runs])  # (seeds, episodes)
    out = {}
    for name, runs in baselines.items():
        d = ppo - _episode_returns(runs)[None, :]
        out[name] = {**mean_ci(d.mean(1)), "wins": int((d > 0).sum()), "pairs": int(d.size),
                     "episode_ci": mean_ci(d.mean(0))}  # fmt: skip
    return out


def markdown(result: dict) -> str:
    """The results table of one benchmark run as Markdown."""
    s = result["settings"]
    env, minutes = result["environment"], {k: result[f"{k}_seconds"] / 60 for k in ("wall", "ppo", "tuning")}
    lines = [
        f"## {result['task']} ({s['difficulty']}): PPO over {len(result['ppo_seeds'])} training seeds, "
        f"{result['timesteps_per_seed']:,} timesteps each",
        "",
        f"Users: {result['users']}. Machine: {env['cpus']} cores, load {env['load_avg_1m_at_start']} at start; "
        f"wall time {minutes['wall']:.0f} min (PPO {minutes['ppo']:.0f}, tuning {minutes['tuning']:.0f}).",
        f"PPO learns {_learns(result.get('anchor', 'none'))}.",
    ]
    for set_name, res in result["eval_sets"].items():
        lines += ["", f"**{set_name}** (population {res['population_seed']}, {len(res['seeds'])} episodes)", "",
                  "| policy | return (mean ± std) | PPO − policy [95% CI over training seeds] "
                  "| [95% CI over episodes] | PPO wins |",
                  "|---|---|---|---|---|"]  # fmt: skip
        p = res["ppo_seed_means"]
        lines.append(f"| PPO | {np.mean(p):.2f} ± {np.std(p, ddof=1) if len(p) > 1 else 0:.2f} (over seeds) | | | |")
        for name, runs in res["baselines"].items():
            r, v = _episode_returns(runs), res["ppo_vs"][name]
            e = v["episode_ci"]
            lines.append(f"| {name} | {r.mean():.2f} ± {r.std(ddof=1):.2f} | {v['mean']:+.2f} [{v['lo']:+.2f}, "
                         f"{v['hi']:+.2f}] | [{e['lo']:+.2f}, {e['hi']:+.2f}] "
                         f"| {v['wins']}/{v['pairs']} |")  # fmt: skip
        if "stats" in res:
            lines += ["", f"IQM and mean of {set_name} over runs x episodes (PPO's runs: its training seeds; "
                      "95% stratified bootstrap CIs) and PPO's probability of improvement:", ""]  # fmt: skip
            lines += rl_stats.table(res["stats"], "PPO")
    if any(np.ptp(res["ppo_seed_means"]) == 0 for res in result["eval_sets"].values()):
        lines += ["", "PPO's training seeds ended in the same policy (the interval over them has width 0): "
                  "the interval over episodes (PPO's seed-mean minus the baseline, per episode) "
                  "is the one to read."]  # fmt: skip
    lines += headroom(result)
    spent = ", ".join(f"{k} {v:,}" for k, v in result["tuning_env_steps"].items())
    lines += ["", f"Tuning compute (env steps): {spent}; PPO {result['timesteps_per_seed']:,} per seed."]
    return "\n".join(lines) + "\n"


def _learns(anchor: str) -> str:
    """What PPO learns, by its anchor (`--anchor`)."""
    return (
        "the whole action" if anchor == "none" else f"corrections of its anchor, {anchor} (tuned on the tuning seeds)"
    )


def headroom(result: dict) -> list[str]:
    """Lines on what learning can gain: the tuned baseline best on the tuning seeds (never
    chosen on the data it is scored on; the line names the one that did better on the
    evaluation episodes, if another did) against the privileged
    reference (a rule that reads the hidden labels; a reference, not a proven upper bound)
    where the task has one, and how much of that gap PPO closes."""
    lines = []
    for set_name, res in result["eval_sets"].items():
        means = {name: _episode_returns(runs).mean() for name, runs in res["baselines"].items()}
        privileged = [n for n in means if "privileged" in n]
        tuned = {n: m for n, m in means.items() if n.startswith("tuned")}
        if not privileged or not tuned:
            continue
        best = max(tuned, key=lambda n: _tuning_score(result, n, tuned[n]))  # chosen on the tuning seeds
        chosen = f"the tuned baseline best on the tuning seeds, {best} {tuned[best]:.2f}"
        top = max(tuned, key=tuned.get)
        if tuned[top] > tuned[best]:  # a reader compares the numbers on the line: say which one leads here
            chosen += f" (on these episodes {top} did better: {tuned[top]:.2f})"
        gap, ppo = means[privileged[0]] - tuned[best], float(np.mean(res["ppo_seed_means"]))
        if gap > 0 and ppo >= tuned[best]:
            closed = f"; PPO closes {(ppo - tuned[best]) / gap:.0%} of it"
        else:  # (a share of a gap PPO does not enter, or of none, says nothing)
            closed = f"; PPO is {ppo - tuned[best]:+.2f} from that baseline"
        lines.append(f"Headroom on {set_name}: {privileged[0]} {means[privileged[0]]:.2f} vs {chosen}: "
                     f"{gap:+.2f}{closed}.")  # fmt: skip
    return [""] + lines if lines else []


def _tuning_score(result: dict, name: str, fallback: float) -> float:
    """A tuned baseline's score on the tuning seeds (`tuned_report_threshold` ->
    result["tuned"]["report_threshold"]["score"]); `fallback` where none was saved."""
    saved = result.get("tuned", {}).get(name.removeprefix("tuned_"), {})
    return float(saved["score"]) if isinstance(saved, dict) and "score" in saved else fallback


def curves_figure(curves: list[list], title: str):
    """The figure of `plot_curves`: every seed's learning curve (thin), their mean and, with two
    seeds or more, the 95% interval of the mean at each timestep (Student's t over the seeds,
    `metrics.intervals.mean_ci`: the seeds are independent runs)."""
    fig, (ax,) = new_figure(1, panel=(4.5, 5.0))
    grid = np.linspace(0, max(c[-1][0] for c in curves if c), 50) if any(curves) else np.zeros(0)
    ys = [np.interp(grid, *np.asarray(c, np.float64).T[:2]) for c in curves if len(c) > 1]
    mean, style = series_style(0) | {"marker": None}, {"color": PALETTE[0]}
    for y in ys:
        ax.plot(grid, y, lw=0.6, alpha=0.4, **style)  # (unlabelled: the legend says what they are)
    if len(ys) > 1:
        ci = [mean_ci(col) for col in np.asarray(ys).T]
        lo, hi = [c["lo"] for c in ci], [c["hi"] for c in ci]
        band = f"95% interval of the mean over {len(ys)} seeds (t); thin lines: each seed"
        ax.fill_between(grid, lo, hi, alpha=0.2, label=band, **style)
    if ys:
        ax.plot(grid, np.mean(ys, 0), lw=2, label=f"mean of {len(ys)} seed{'s' * (len(ys) > 1)}", **mean)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15))
    ax.set_xlabel("PPO timesteps (env steps, all envs)")
    ax.set_ylabel("training episode return (sum of rewards)")
    ax.set_title(title)
    fig.set_layout_engine("constrained")  # room for the legend below the axes
    return fig


def plot_curves(curves: list[list], path: Path, title: str) -> None:
    """`curves_figure` as a PNG."""
    save_png(curves_figure(curves, title), path, dpi=110)


def write_band_to_tensorboard(curves: list[list], logdir: Path) -> None:
    """The mean, min and max of the seeds' curves as TensorBoard scalars (benchmark/*)."""
    from tensorboardX import SummaryWriter

    ys = [np.asarray(c, np.float64) for c in curves if len(c) > 1]
    if not ys:
        return
    grid = np.linspace(0, min(y[-1, 0] for y in ys), 50)
    vals = np.stack([np.interp(grid, y[:, 0], y[:, 1]) for y in ys])
    with SummaryWriter(str(logdir)) as w:
        for i, step in enumerate(grid.astype(int)):
            for name, v in (("mean", vals[:, i].mean()), ("min", vals[:, i].min()), ("max", vals[:, i].max())):
                w.add_scalar(f"benchmark/episode_return_{name}", float(v), int(step))


def run(args: v1.Args, seeds: int, say=print) -> dict:
    """Steps 1-4 (module docstring); writes results.md, results.json, learning_curves.png and
    tb_band/ under args.out, each seed's model under args.out/seed_<i>/."""
    start = time.perf_counter()
    limit_threads(1)  # as `train` does: 2 torch threads on 2 busy cores made PPO 4-12x slower (issue 57)
    environment = _environment()
    tuned = v1_baselines.tune(args, say)
    anchor = v1_baselines.make_anchor(args, tuned)
    tuning_seconds = time.perf_counter() - start
    out, models, curves, ppo_seconds = Path(args.out), [], [], 0.0
    for i in range(seeds):
        say(f"training PPO seed {i + 1}/{seeds}")
        run_args = dataclasses.replace(args, seed=args.seed + i, out=str(out / f"seed_{args.seed + i}"))
        train_output(run_args.out, overwrite=True).claim_trees()
        model, vec, info = v1.train_on_task(run_args, anchor)
        ppo_seconds += info["train_seconds"]
        models.append((model, vec))
        curves.append(info["learning_curve"])
    say(f"evaluating {seeds} PPO models and the baselines on {len(args.eval_seeds)} held-out seeds x 2 sets")
    base = v1_baselines.baselines(args, tuned)
    eval_sets = {}
    for name, population in held_out(args).items():
        runs = {c: play(args, population, f) for c, f in base.items()}
        ppo = [play(args, population, v1.ppo_policy(m, v, anchor)) for m, v in models]
        eval_sets[name] = {"population_seed": population, "seeds": list(args.eval_seeds), "baselines": runs,
                           "ppo_runs": ppo, "ppo_seed_means": [float(_episode_returns(r).mean()) for r in ppo],
                           "ppo_vs": compare(ppo, runs)}  # fmt: skip
        eval_sets[name]["stats"] = rl_stats.report(candidate_scores(eval_sets[name]), "PPO")
    result = {"task": args.task_id, "settings": dataclasses.asdict(args), "ppo_seeds": list(range(
              args.seed, args.seed + seeds)), "timesteps_per_seed": int(models[0][0].num_timesteps),
              "anchor": anchor.name, "tuned": tuned, "tuning_env_steps": _tuning_steps(tuned), "eval_sets": eval_sets,
              "learning_curves": curves, "users": "rule-based (oasis_gym.batched), no LLM",
              "environment": environment, "tuning_seconds": tuning_seconds, "ppo_seconds": ppo_seconds,
              "wall_seconds": time.perf_counter() - start}  # fmt: skip
    with train_output(out, overwrite=True).staging() as tmp:
        (tmp / "results.md").write_text(markdown(result), encoding="utf-8")
        (tmp / "results.json").write_text(json.dumps(result, default=_jsonable), encoding="utf-8")
        plot_curves(curves, tmp / "learning_curves.png", f"{result['task']} ({args.difficulty}): PPO, {seeds} seeds")
        write_band_to_tensorboard(curves, tmp / "tb_band")
        profiles = {n: candidate_scores(r) for n, r in eval_sets.items()}
        save_png(rl_stats.profile_figure(profiles, f"{result['task']} ({args.difficulty})"),
                 tmp / "performance_profiles.png", dpi=110)  # fmt: skip
    return result


def _tuning_steps(tuned: dict) -> dict[str, int]:
    return {k: int(v["env_steps"]) for k, v in tuned.items() if isinstance(v, dict) and "env_steps" in v} | (
        {"rules": int(tuned["env_steps"])} if "env_steps" in tuned else {}
    )


def _jsonable(obj):
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return str(obj)


def add_benchmark_parser(subparsers) -> argparse.ArgumentParser:
    """`oasis-gym benchmark {recommender,moderator}` with the v1 training options and --seeds."""
    p = subparsers.add_parser("benchmark", help="the v1 benchmark protocol: N PPO seeds vs tuned baselines",
                              description=__doc__.split("\n")[0])  # fmt: skip
    targets = p.add_subparsers(dest="target", required=True, metavar="{recommender,moderator}")
    for task in v1.TASKS:  # one parser per task: its errors name it (`oasis-gym benchmark moderator: error: ...`)
        text = (f"benchmark {task.capitalize()}-v{v1.DEFAULT_VERSION[task]} (--version: another): PPO over N "
                "training seeds vs its tuned baselines")  # fmt: skip
        t = targets.add_parser(task, help=text, description=text)
        seeds = int_option(2, MAX_SEEDS)
        t.add_argument(
            "--seeds", type=seeds, default=5, help=with_bounds("PPO training seeds (seed .. seed+N-1)", seeds)
        )
        v1.add_options(t)
    return p


def cmd_benchmark(ns: argparse.Namespace) -> int:
    """Check everything, run the protocol, print the Markdown table and where the files are."""
    command = f"oasis-gym benchmark {ns.target}"
    args = dataclasses.replace(cli_args.parse_into(v1.Args, ns, v1.Args(task=ns.target)), quiet=ns.quiet or ns.json)
    try:
        whole_number(ns.seeds, "--seeds", 2, MAX_SEEDS)
        args.check(n_seeds=ns.seeds)
        output = benchmark_output(args.out, ns.overwrite).check()
    except (ValueError, OSError) as err:
        print(f"{command}: error: {err}", file=sys.stderr)
        return 2
    say = v1.progress_printer(args.quiet)
    with staged_training(output, say):
        result = run(args, ns.seeds, say=say)
    held = result["eval_sets"]["held-out seeds"]["ppo_vs"]
    if not ns.json:
        print(markdown(result))
    Summary(
        f"\nBenchmarked {args.task_id} ({args.difficulty}): PPO over {ns.seeds} training seeds vs the tuned "
        "baselines (rule-based users).",
        outputs=[(f"{args.out}/results.md", "the table above"), (f"{args.out}/results.json", "every number"),
                 (f"{args.out}/learning_curves.png", "PPO's return over training, mean and band"),
                 (f"{args.out}/performance_profiles.png", "the share of runs x episodes above each return"),
                 (f"{args.out}/seed_*/", "each seed's model.zip, eval.json and TensorBoard run")],
        next=[(f"tensorboard --logdir {args.out}", "the band and every seed's run")],
        data={"task": result["task"], "difficulty": args.difficulty, "out": args.out,
              "ppo_vs": {c: [v["mean"], v["lo"], v["hi"]] for c, v in held.items()}},
    ).show(as_json=ns.json)  # fmt: skip
    return 0
