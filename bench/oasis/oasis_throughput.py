"""Throughput against OASIS: the same scripted action mix through each system's public API.

Each step, every user acts: an action kind drawn from the mix of bench/oasis/oasis_diff.py (posts,
reposts, quotes, likes and their undoing, dislikes, comments and their votes, follows,
unfollows, mutes, reports, do_nothing) and a random target. OASIS (camel-oasis 0.2.5, run by
``--oasis-python``, the interpreter of its own venv; never a dependency of this project)
gets a ``ManualAction`` per agent through ``env.step`` (random recommender: its default
downloads a model; a stub model that is never called); oasis-gym gets a PettingZoo action
dict per agent through ``parallel_env(...).step`` (journal on, ``recsys="random"`` like
OASIS; a second oasis-gym row with the default twitter recommender). Targets are drawn
without looking at validity on either side (OASIS: a post / comment / user id among those
that may exist; oasis-gym: a slot of the observation), so both reject some actions.

Timed: the steps after the first (no imports, no set-up, no reset). Runs alternate in
pairs (OASIS, then oasis-gym with the same users and steps) so that both see the same load;
each row records the 1-minute load average before and after it. The machine is shared: say so
with the figures. Each run's journal goes to a temp folder it removes.

    /work/venv-oasis/bin/pip install torch==2.13.0  # first: the CPU build (unpinned, camel pulls CUDA wheels)
    /work/venv-oasis/bin/pip install camel-oasis==0.2.5 "pydantic<2.12" mcp==1.16.0 torch==2.13.0
    python bench/oasis/oasis_throughput.py --oasis-python /work/venv-oasis/bin/python \\
        --users 100,1000 --steps 100:12,1000:4 --pairs 3

Prints one JSON line per run and a summary line per user count: the median over pairs of
oasis-gym's actions/s over OASIS's, and each pair's ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from oasis_diff import KINDS, WEIGHTS  # the same scripted mix as bench/oasis/oasis_diff.py (beside this file)

TEXTS = ("create_post", "quote_post", "create_comment", "report_post")


def _draws(users: int, steps: int, seed: int):
    """Per step: (kind index, a uniform number in [0, 1)) for each user."""
    import random

    rng = random.Random(seed)
    cum, total = [], 0
    for w in WEIGHTS:
        total += w
        cum.append(total)
    for _ in range(steps):
        yield [(next(i for i, c in enumerate(cum) if c > rng.random() * total), rng.random()) for _ in range(users)]


# --------------------------------------------------------------------------- OASIS side (its venv)


def run_oasis(users: int, steps: int, seed: int) -> dict:
    """OASIS's env with every agent acting each step; runs under the camel-oasis interpreter."""
    import asyncio
    import logging

    os.environ.setdefault("OPENAI_API_KEY", "unused")  # camel builds a default client; never called
    logging.disable(logging.CRITICAL)
    import oasis
    from camel.models import ModelFactory
    from camel.types import ModelPlatformType, ModelType
    from oasis import ActionType, AgentGraph, ManualAction, SocialAgent, UserInfo
    from oasis.social_platform.channel import Channel

    stub = ModelFactory.create(model_platform=ModelPlatformType.OPENAI, model_type=ModelType.STUB)

    def args_of(kind: str, x: float, posts: int, comments: int, text: str) -> dict:
        post, comment, other = 1 + int(x * max(posts, 1)), 1 + int(x * max(comments, 1)), int(x * users)
        if kind in ("repost", "like_post", "unlike_post", "dislike_post", "undo_dislike_post"):
            return {"post_id": post}
        if kind == "quote_post":
            return {"post_id": post, "quote_content": text}
        if kind == "create_comment":
            return {"post_id": post, "content": text}
        if kind == "report_post":
            return {"post_id": post, "report_reason": text}
        if kind.endswith("comment"):
            return {"comment_id": comment}
        if kind in ("follow", "unfollow"):
            return {"followee_id": other}
        if kind == "mute":
            return {"mutee_id": other}
        if kind == "create_post":
            return {"content": text}
        return {}

    async def main(db: str) -> list[float]:
        graph = AgentGraph()
        for u in range(users):
            info = UserInfo(user_name=f"user{u}", name=f"User {u}", description=f"bio {u}", profile=None)
            graph.add_agent(SocialAgent(agent_id=u, user_info=info, model=stub))
        platform = oasis.Platform(db, channel=Channel(), recsys_type="random", refresh_rec_post_count=2)
        env = oasis.make(agent_graph=graph, platform=platform, database_path=db)
        await env.reset()
        agents = [env.agent_graph.get_agent(u) for u in range(users)]
        times, posts, comments = [], 0, 0
        for step, draws in enumerate(_draws(users, steps, seed)):
            actions = {}
            for agent, (k, x) in zip(agents, draws):
                kind = KINDS[k]
                actions[agent] = ManualAction(
                    action_type=ActionType(kind), action_args=args_of(kind, x, posts, comments, f"text {step}")
                )
            t = time.perf_counter()
            await env.step(actions)
            times.append(time.perf_counter() - t)
            posts += sum(1 for k, _ in draws if KINDS[k] in ("create_post", "repost", "quote_post"))
            comments += sum(1 for k, _ in draws if KINDS[k] == "create_comment")
        await env.close()
        return times

    with tempfile.TemporaryDirectory(prefix="oasis_tp_") as tmp:  # (removed with its journal)
        step_s = asyncio.run(main(os.path.join(tmp, "oasis.db")))
    return {"system": "oasis", "version": oasis.__version__, "step_s": step_s}


# --------------------------------------------------------------------------- oasis-gym side


def run_ours(users: int, steps: int, seed: int, recsys: str) -> dict:
    """oasis-gym's PettingZoo env, one action dict per agent each step."""
    from oasis_gym.actions import ACTION_BY_NAME
    from oasis_gym.envs import twitter_v0

    with tempfile.TemporaryDirectory(prefix="gym_tp_") as tmp:  # (removed with its journal)
        db = os.path.join(tmp, "run.db")
        env = twitter_v0.parallel_env(users=users, activation=1.0, max_cycles=steps + 1, db_path=db, recsys=recsys)
        obs, _ = env.reset(seed=seed)
        K, C, U = env.sim.K, env.sim.K * env.sim.C, env.sim.U
        codes = [int(ACTION_BY_NAME[k]) for k in KINDS]
        names = env.possible_agents[:users]
        times = []
        for step, draws in enumerate(_draws(users, steps, seed)):
            actions = {}
            for name, (k, x) in zip(names, draws):
                act = {"type": codes[k], "post": int(x * K), "comment": int(x * C), "user": int(x * U)}
                if KINDS[k] in TEXTS:
                    act["text"] = f"text {step}"
                actions[name] = act
            t = time.perf_counter()
            obs, rewards, terms, truncs, infos = env.step(actions)
            times.append(time.perf_counter() - t)
        env.close()
    return {"system": f"oasis-gym ({recsys} recsys)", "step_s": times}


# --------------------------------------------------------------------------- driver


def _run(cmd: list[str]) -> dict:
    load0 = os.getloadavg()[0]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} failed:\n{done.stderr[-3000:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    out.update(loadavg_before=round(load0, 2), loadavg_after=round(os.getloadavg()[0], 2))
    return out


def _summary(out: dict, users: int) -> dict:
    timed = out.pop("step_s")[1:]  # the first step warms up
    out.update(users=users, timed_steps=len(timed), step_s_median=round(statistics.median(timed), 4))
    out["actions_per_s"] = round(users * len(timed) / sum(timed), 1)
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--oasis-python", default="/work/venv-oasis/bin/python", help="interpreter with camel-oasis 0.2.5")
    ap.add_argument("--users", default="100,1000", help="user counts, comma-separated [100,1000]")
    ap.add_argument("--steps", default="100:12,1000:4", help="steps per user count, N:S pairs [100:12,1000:4]")
    ap.add_argument("--pairs", type=int, default=3, help="OASIS / oasis-gym pairs per user count [3]")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--side", nargs=4, metavar=("SYSTEM", "USERS", "STEPS", "SEED"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.side:
        system, users, steps, seed = args.side[0], *map(int, args.side[1:])
        out = run_oasis(users, steps, seed) if system == "oasis" else run_ours(users, steps, seed, system)
        print(json.dumps(out))
        return
    steps_of = dict(tuple(map(int, p.split(":"))) for p in args.steps.split(","))
    me = os.path.abspath(__file__)
    for users in map(int, args.users.split(",")):
        steps = steps_of.get(users, 4)
        ratios, ratios_twitter = [], []
        for pair in range(args.pairs):
            seed = args.seed + pair
            row = {}
            for system in ("oasis", "random", "twitter"):
                python = args.oasis_python if system == "oasis" else sys.executable
                out = _summary(_run([python, me, "--side", system, str(users), str(steps), str(seed)]), users)
                out.update(bench="oasis_throughput", pair=pair)
                print(json.dumps(out), flush=True)
                row[system] = out["actions_per_s"]
            ratios.append(row["random"] / row["oasis"])
            ratios_twitter.append(row["twitter"] / row["oasis"])
        print(
            json.dumps(
                {
                    "bench": "oasis_throughput_summary",
                    "users": users,
                    "steps": steps,
                    "pairs": args.pairs,
                    "ratio_median": round(statistics.median(ratios), 1),
                    "ratios": [round(r, 1) for r in ratios],
                    "ratio_twitter_recsys_median": round(statistics.median(ratios_twitter), 1),
                    "cpus": os.cpu_count(),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()
