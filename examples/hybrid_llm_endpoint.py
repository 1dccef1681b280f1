"""A hybrid run: the most-followed users are LLM users served by an OpenAI-compatible endpoint,
everyone else is a rule-based (ABM) user.

What it shows: the Python API behind `oasis-gym run --policy hybrid --llm-backend openai
--llm-endpoint URL/v1 --llm-model NAME`: an endpoint backend (`policies.factory.llm_backend`),
the LLM policy over it (`llm_policy`, with a per-step deadline), the routing of the top-k
users by followers to it and of the rest to `ABMPolicy` (`HybridPolicy.top_k_by_followers`),
and `oasis_gym.app.run.simulate`. Every step all LLM users' requests go out at once; whatever
the model replies becomes an action or a counted invalid reply (then the user does nothing).
At the end it reads the journal to compare what the LLM users and the ABM users did.

Any OpenAI-compatible server works: vLLM
(`python -m vllm.entrypoints.openai.api_server --model M ...`, see docs/llm_backends.md),
`transformers serve M`, SGLang, llama.cpp's server, a hosted API (`--api-key`).
Time: the ABM part takes about a second on 2 cores; the rest is the server's (with a tiny
test model on the same 2 cores and the defaults, 5 LLM users x 3 steps: about 5 s on a vLLM
server, 20 s on `transformers serve`).

    python examples/hybrid_llm_endpoint.py --endpoint http://127.0.0.1:8000/v1 --model tiny
    python examples/hybrid_llm_endpoint.py --endpoint URL/v1 --model NAME --users 2000 --core-users 20 --steps 10
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
from pathlib import Path

from oasis_gym.app.run import simulate
from oasis_gym.envs import twitter_v0
from oasis_gym.policies.abm import ABMPolicy
from oasis_gym.policies.factory import llm_backend, llm_policy
from oasis_gym.policies.hybrid import HybridPolicy


def seed_posts(count: int):
    """A setup hook (`setup(sim)`, run at every reset): the `count` most-followed users have
    written one post each before step 0, so the first feeds are not empty."""

    def setup(sim) -> None:
        pf = sim.platform
        authors = pf.most_followed(count)
        stance = pf.u_opinion.a[authors]
        texts = [
            f"Post {i}: {'I am all for' if s > 0 else 'I am against'} the new city transport plan."
            for i, s in enumerate(stance.tolist())
        ]
        pf.create_posts(authors, texts, stance=stance)

    return setup


def actions_by_group(db: Path, llm_users: list[int]) -> dict[str, dict[str, int]]:
    """Accepted actions per group (LLM users / ABM users), from the journal's `trace` table."""
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA query_only = 1")
    try:
        rows = conn.execute("SELECT user_id, action FROM trace WHERE result = 'ok'").fetchall()
    finally:
        conn.close()
    llm = set(llm_users)
    groups: dict[str, dict[str, int]] = {"LLM users": {}, "ABM users": {}}
    for user, action in rows:
        g = groups["LLM users" if user in llm else "ABM users"]
        g[action] = g.get(action, 0) + 1
    return groups


def main(argv: list[str] | None = None) -> int:
    """Run the hybrid simulation against the endpoint and print a summary."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--endpoint", required=True, action="append", help="OpenAI-compatible base URL, e.g. URL/v1")
    p.add_argument("--model", required=True, help="the model name the server serves")
    p.add_argument("--api-key", default=None, help="bearer token, for a hosted API")
    p.add_argument("--structured", default="response_format", choices=("response_format", "structured_outputs", "none"))
    p.add_argument("--users", type=int, default=200, help="synthetic users (default 200)")
    p.add_argument("--core-users", type=int, default=5, help="most-followed users driven by the LLM (default 5)")
    p.add_argument("--steps", type=int, default=3, help="steps (default 3)")
    p.add_argument("--activation", type=float, default=0.5, help="chance a user acts in a step (default 0.5)")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds one request attempt may take (default 60)")
    p.add_argument("--retries", type=int, default=1, help="retries of a failed request (default 1)")
    p.add_argument("--step-deadline", type=float, default=120.0, help="seconds the LLM users of a step may take")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=None, help="output folder (default: a fresh temp folder)")
    args = p.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="oasis_gym_hybrid_"))
    out.mkdir(parents=True, exist_ok=True)
    db = out / "hybrid.db"
    print(f"output folder: {out}")

    # the backend first: a bad endpoint setting fails here, before any journal is written
    backend = llm_backend(
        "openai",
        model=args.model,
        endpoints=args.endpoint,
        announce=True,  # prints "LLM users: openai ... at URL, model NAME" to stderr
        api_key=args.api_key,
        structured=args.structured,
        request_timeout=args.timeout,
        connect_timeout=min(5.0, args.timeout),
        max_retries=args.retries,
    )
    llm = llm_policy(backend, step_deadline_s=args.step_deadline, seed=args.seed)

    env = twitter_v0.parallel_env(
        users=args.users,
        max_cycles=args.steps,
        activation=args.activation,
        setup=seed_posts(20),
        db_path=str(db),
        overwrite=True,
    )
    env.reset(seed=args.seed)  # the platform must exist to find the most-followed users
    policy = HybridPolicy.top_k_by_followers(env, llm, ABMPolicy(), k=args.core_users)
    llm_users = policy.routes[0][1].tolist()
    try:
        summary = simulate(env, policy, seed=args.seed)  # resets again with the same seed: the same users
    finally:
        env.close()

    stats = summary.llm
    groups = actions_by_group(db, llm_users)
    for name, counts in groups.items():
        print(f"  {name}: " + ", ".join(f"{a} {k}" for a, k in sorted(counts.items(), key=lambda kv: -kv[1])))
    print(
        f"\nSummary: {args.users} users x {summary.steps} steps; the {len(llm_users)} most-followed "
        f"(ids {llm_users}) were LLM users at {', '.join(args.endpoint)} (model {args.model}), the rest ABM. "
        f"LLM decisions: {stats.get('agents', 0)} ({stats.get('valid', 0)} valid, {stats.get('invalid', 0)} invalid "
        f"replies, {stats.get('fallback', 0)} failed requests, {stats.get('deadline_noop', 0)} past the deadline), "
        f"{stats.get('decisions_per_s', 0.0)} decisions/s; {summary.accepted} of {summary.actions} actions accepted."
    )
    print(f"Journal: {db} (SQLite, OASIS's tables; `oasis-gym report {db}` plots it).")
    print(
        "A similar run from the command line: oasis-gym run --policy hybrid --llm-backend openai "
        f"--llm-endpoint {args.endpoint[0]} --llm-model {args.model} --users {args.users} "
        f"--core-users {args.core_users} --steps {args.steps} --activation {args.activation} --db run.db"
    )
    print(
        "Try next: more --core-users, several --endpoint URLs (requests are load-balanced), or a real model "
        "(SmolLM2 on vLLM, docs/llm_backends.md); with a random test model most replies are invalid."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
