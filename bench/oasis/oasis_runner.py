"""Runs camel-oasis (OASIS 0.2.5) for bench/oasis/llm_vs_oasis.py — executed by the Python of a
separate venv that has camel-oasis (never a dependency of this project, never imported by it).

    <oasis-venv>/bin/python bench/oasis/oasis_runner.py --url http://127.0.0.1:PORT/v1 --model-dir DIR \
        --profiles users.csv --steps 2 --db out.db [--max-tokens 440]

Twitter platform with ``recsys_type="random"`` (OASIS's default recommender downloads a
model), every agent an ``LLMAction`` each step, the model served by vLLM (tool calling).
camel's default token counter fetches tiktoken files: a local counter on the model's own
tokenizer replaces it. Prints ONE JSON line: wall time of the steps, decisions, and valid
actions (trace rows of a platform action per agent and step).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import time


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--served-name", default="smollm2")
    ap.add_argument("--model-dir", required=True)
    ap.add_argument("--profiles", required=True)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--db", required=True)
    ap.add_argument("--max-tokens", type=int, default=None)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--frequency-penalty", type=float, default=0.0, help="0: OASIS as shipped (none)")
    args = ap.parse_args()

    import oasis
    from camel.models import ModelFactory
    from camel.types import ModelPlatformType
    from camel.utils import BaseTokenCounter
    from oasis import ActionType, LLMAction, generate_twitter_agent_graph
    from oasis.social_platform.channel import Channel
    from oasis.social_platform.platform import Platform
    from tokenizers import Tokenizer

    class LocalTokenCounter(BaseTokenCounter):
        """Counts with the served model's tokenizer.json (no tiktoken download; the tokenizers
        library, since this venv's older transformers cannot read a transformers-5 config)."""

        def __init__(self, path: str) -> None:
            self.tok = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))

        def count_tokens_from_messages(self, messages) -> int:
            return sum(len(self.tok.encode(str(m.get("content") or "")).ids) + 4 for m in messages)

        def encode(self, text: str):
            return self.tok.encode(text).ids

        def decode(self, token_ids) -> str:
            return self.tok.decode(token_ids)

    config = {"temperature": args.temperature}
    if args.max_tokens:
        config["max_tokens"] = args.max_tokens
    if args.frequency_penalty:
        config["frequency_penalty"] = args.frequency_penalty
    model = ModelFactory.create(
        model_platform=ModelPlatformType.VLLM,
        model_type=args.served_name,
        url=args.url,
        api_key="EMPTY",
        model_config_dict=config,
        token_counter=LocalTokenCounter(args.model_dir),
        timeout=600,
    )
    actions = [
        ActionType.CREATE_POST,
        ActionType.LIKE_POST,
        ActionType.REPOST,
        ActionType.FOLLOW,
        ActionType.DO_NOTHING,
        ActionType.QUOTE_POST,
    ]

    async def run() -> dict:
        graph = await generate_twitter_agent_graph(profile_path=args.profiles, model=model, available_actions=actions)
        if os.path.exists(args.db):
            os.remove(args.db)  # our own output file from an earlier run of this bench
        platform = Platform(
            db_path=args.db,
            channel=Channel(),
            recsys_type="random",
            refresh_rec_post_count=2,
            max_rec_post_len=2,
            following_post_count=3,
        )
        env = oasis.make(agent_graph=graph, platform=platform, database_path=args.db)
        await env.reset()
        agents = [a for _, a in env.agent_graph.get_agents()]
        t0 = time.perf_counter()
        for _ in range(args.steps):
            await env.step({a: LLMAction() for a in agents})
        run_s = time.perf_counter() - t0
        await env.close()
        return {"agents": len(agents), "run_s": run_s}

    out = asyncio.run(run())
    names = tuple(a.value for a in actions)
    with sqlite3.connect(args.db) as conn:
        valid = conn.execute(
            f"SELECT COUNT(*) FROM trace WHERE action IN ({','.join('?' * len(names))})", names
        ).fetchone()[0]
    decisions = out["agents"] * args.steps
    print(
        json.dumps(
            {
                "decisions": decisions,
                "run_s": round(out["run_s"], 1),
                "valid_actions": valid,
                "oasis": oasis.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
