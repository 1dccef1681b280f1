"""How loud a campaign's popularity lie is: Recommender-v3's bots beside Recommender-v4's (issue 51).

    python bench/research/campaign_signal.py                      # medium and hard, bots 1 2 4 8 16
    python bench/research/campaign_signal.py --tiers medium --bots 2,4 --episodes 4

Recommender-v3's campaign bots like every live campaign post once per bot *every step* of the
campaign; under OASIS's rules (Recommender-v4) a bot likes a post once, so the lie is capped at
one like per bot account, and v4 needs more bot accounts (`campaign_amplify`: bots per
misinformation account) to tell the ranking as much. This plays episodes of v3 and of v4 with
each candidate number of bots (1 000 users, the default ranking, the *tuning* seeds 5000+ of
population 0: never the evaluation seeds 9000+) and measures, over the steps a campaign runs:
- `popularity_gap`: the mean ranking feature `popularity` (log(1 + likes + shares) / log 1000)
  of the live posts of misinformation accounts minus that of the other live posts: the lie;
- `pool_popularity_shift`: the observation's pool popularity during campaigns minus between
  them: what a campaign detector reads;
- `campaign_misinfo_share`: the mean share of misinformation in a step's impressions during
  campaigns under the default ranking: what the lie does.
The constant of v4 (`model/tiers.V4_BOTS`) is the number of bots whose gap comes nearest v3's.
A progress line per run on stderr, one JSON line on stdout (with the load).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace

import numpy as np

from oasis_gym.batched.engine import Engine
from oasis_gym.batched.feed import COL, post_table
from oasis_gym.batched.tasks import RecommenderTask
from oasis_gym.model.ranking import CANDIDATE_FEATURES, DEFAULT_WEIGHTS
from oasis_gym.model.tiers import tier

POOL_POPULARITY = 10 + CANDIDATE_FEATURES.index("popularity")  # RECOMMENDER_OBS: time, then the pool means


def signal(dyn, n_users: int, episodes: int, steps: int) -> dict:
    """The campaign measures of `episodes` episodes (seeds 5000+) of the tier `dyn`."""
    task = RecommenderTask(episodes, n_users, "medium", 0, steps, version=3)
    task.engine = Engine(episodes, n_users, dynamics=dyn)  # the tier under test (v3's spaces)
    task.reset(np.arange(episodes), 5000 + np.arange(episodes))
    action = np.tile(np.r_[DEFAULT_WEIGHTS, np.zeros(task.action_size - len(DEFAULT_WEIGHTS))],
                     (episodes, 1)).astype(np.float32)  # fmt: skip
    gaps, on_pool, off_pool, shares = [], [], [], []
    st = task.state
    for _ in range(steps):
        obs, _, info = task.step(action)
        on = st.campaign
        off_pool += list(obs[~on, POOL_POPULARITY])
        on_pool += list(obs[on, POOL_POPULARITY])
        if not on.any():
            continue
        pop = post_table(st)[:, COL["popularity"]].reshape(st.k, st.p)
        live = (st.post_id >= 0) & ~st.removed
        theirs = np.take_along_axis(st.misinfo_account, st.author, 1) & live
        for k in np.flatnonzero(on):
            if theirs[k].any() and (live[k] & ~theirs[k]).any():
                gaps.append(pop[k][theirs[k]].mean() - pop[k][live[k] & ~theirs[k]].mean())
        shares += list(info["misinfo_share"][on])
    return {
        "popularity_gap": round(float(np.mean(gaps)), 4) if gaps else None,
        "pool_popularity_shift": round(float(np.mean(on_pool) - np.mean(off_pool)), 4) if on_pool else None,
        "campaign_misinfo_share": round(float(np.mean(shares)), 4) if shares else None,
        "campaign_steps": len(on_pool),
    }


def main(argv: list[str] | None = None) -> int:
    """Command line (module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tiers", default="medium,hard", help="comma-separated tiers with campaigns (medium, hard)")
    p.add_argument("--bots", default="1,2,4,8,16", help="comma-separated bots per misinformation account (v4)")
    p.add_argument("--users", type=int, default=1000, help="users per episode (100..100000)")
    p.add_argument("--episodes", type=int, default=8, help="episodes per run, seeds 5000+ (1..64)")
    p.add_argument("--steps", type=int, default=100, help="steps per episode (1..1000)")
    a = p.parse_args(argv)
    try:
        tiers, bots = a.tiers.split(","), [float(b) for b in a.bots.split(",")]
    except ValueError:
        bots, tiers = [], []
    if (not tiers or any(t not in ("medium", "hard") for t in tiers) or not bots or any(not 0 < b <= 1000 for b in bots)
            or not 100 <= a.users <= 100_000 or not 1 <= a.episodes <= 64 or not 1 <= a.steps <= 1000):  # fmt: skip
        print(f"campaign_signal: error: --tiers from medium, hard; --bots numbers in (0, 1000]; --users 100..100000; "
              f"--episodes 1..64; --steps 1..1000 (got {a.tiers!r}, {a.bots!r}, {a.users}, {a.episodes}, {a.steps})",
              file=sys.stderr)  # fmt: skip
        return 2
    out = {"bench": "campaign_signal", "users": a.users, "episodes": a.episodes, "steps": a.steps,
           "seeds": f"5000-{5000 + a.episodes - 1}"}  # fmt: skip
    for t in tiers:
        runs = {"v3": tier(t, 3)} | {f"v4_bots_{b:g}": replace(tier(t, 4), campaign_amplify=b) for b in bots}
        out[t] = {}
        for name, dyn in runs.items():
            print(f"campaign_signal: {t} {name} ...", file=sys.stderr, flush=True)
            out[t][name] = signal(dyn, a.users, a.episodes, a.steps)
        v3 = out[t]["v3"]["popularity_gap"]
        out[t]["nearest_v3_gap"] = min(bots, key=lambda b: abs(out[t][f"v4_bots_{b:g}"]["popularity_gap"] - v3))
    out["load"] = round(os.getloadavg()[0], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
