"""Feed views of a real run over OASIS data, for prompt tests and benchmarks.

A ``Simulation`` over the OASIS Twitter profiles of False_Business_0.csv, seeded with the
Reddit counterfactual posts of counterfactual_36.json cut to tweet length, a few steps of
likes, reposts, comments and user searches (as the action set allows), then
``Simulation.feed_views``: exactly what production renders into prompts. The data files are
the copies the package ships.
"""

from __future__ import annotations

import json

import numpy as np

from oasis_gym.actions import ActionType
from oasis_gym.population import data_path, load_twitter_csv
from oasis_gym.sim import ActionArrays, Simulation, SimulationConfig

ALL_USER_ACTIONS = tuple(a for a in ActionType if a != ActionType.SIGN_UP)


def tweet(text: str, n: int = 280) -> str:
    """Cut at a word boundary to at most n characters (a tweet)."""
    s = " ".join(text.split())
    return s if len(s) <= n else s[:n].rsplit(" ", 1)[0]


def counterfactual_texts() -> tuple[list[str], list[str]]:
    """(posts, comments) from OASIS' Reddit counterfactual set: selftexts and reply bodies."""
    rows = json.loads(data_path("counterfactual_36.json").read_text())
    posts = [tweet(r["RS"]["selftext"]) for r in rows]
    comments = [tweet(v["body"]) for r in rows for k, v in r.items() if k.startswith("RC")]
    return posts, comments


def simulation_views(
    n_views: int = 8,
    seed: int = 0,
    n_seed_posts: int = 60,
    actions=ALL_USER_ACTIONS,
    comment_rate: float = 0.1,
    search_rate: float = 0.3,
    steps: int = 2,
) -> list[dict]:
    """Feed views of a real Twitter-like run: 10 posts, comments, counts, visible users.

    ``steps`` steps (default two) of random likes, reposts and comments (each user comments with probability
    ``comment_rate`` per step) give the posts counts and top comments; in the last step
    some users search for users ("media"), so their next view lists search results too.
    Only what ``actions`` (the env's action set) allows happens: OASIS' Twitter default has
    no comments and no search. Viewers: users with a full feed (searchers first), longest
    personas first (the heavy end of ordinary users)."""
    rng = np.random.default_rng(seed)
    pop = load_twitter_csv(data_path("False_Business_0.csv"))
    posts, comments = counterfactual_texts()
    picked = rng.choice(len(posts), n_seed_posts, replace=False)

    def setup(sim: Simulation) -> None:
        sim.platform.create_posts(rng.integers(0, pop.n, n_seed_posts), [posts[i] for i in picked])

    codes = tuple(int(a) for a in actions)
    sim = Simulation(
        pop,
        SimulationConfig(platform="twitter", available_actions=codes, activation=1.0, db_path=":memory:"),
        setup=setup,
    )
    obs = sim.reset(seed=seed)
    searched: set[int] = set()
    for step in range(steps):
        n = len(obs.users)
        kind = rng.choice(
            [ActionType.CREATE_COMMENT, ActionType.LIKE_POST, ActionType.REPOST, ActionType.DO_NOTHING],
            n,
            p=[comment_rate, 0.35, 0.1, 0.55 - comment_rate],
        ).astype(np.int64)
        text = [comments[int(i)] for i in rng.integers(0, len(comments), n)]
        if step == steps - 1 and int(ActionType.SEARCH_USER) in codes:
            search = rng.random(n) < search_rate
            kind[search] = ActionType.SEARCH_USER
            for i in np.flatnonzero(search):
                text[i] = "media"
            searched = set(obs.users[search].tolist())
        sim.step(ActionArrays(obs.users, kind, post=rng.integers(0, sim.K, n), text=text))
        obs = sim.obs
    full = [u for r, u in enumerate(obs.users.tolist()) if (obs.post_ids[r] >= 0).all()]
    persona_len = {u: len(sim.platform.u_persona[u] or sim.platform.u_bio[u]) for u in full}
    viewers = sorted(full, key=lambda u: (u not in searched, -persona_len[u], u))[:n_views]
    views = sim.feed_views(np.array(sorted(viewers), dtype=np.int64))
    for v in views:
        v["memory"] = memory_lines(v, rng)
    sim.close()
    return views


def memory_lines(view: dict, rng: np.random.Generator) -> list[str]:
    """Three entries shaped like ``core.describe`` writes them."""
    p = view["posts"]
    step = int(view.get("step", 2))
    return [
        f"step {max(0, step - 2)}: like_post post {p[int(rng.integers(len(p)))]['post_id']}",
        f"step {max(0, step - 1)}: create_comment post {p[0]['post_id']}: " + tweet(p[0]["text"], 60),
        f"step {step}: repost post {p[-1]['post_id']}",
    ]
